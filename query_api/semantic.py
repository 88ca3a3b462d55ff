"""Semantic Extract: evidence lines chosen by meaning as well as by words.

Every stored passage (an event, or a line group of a long event: the ``chunks``
index, see :mod:`processors.chunker`) already carries a dense vector from ingest; no
second embedding is made. A recall gathers candidate passages from two places:

* the followed ranges (the chosen memories' own chunks, dense + lexical), and
* a direct passage search over the user's sources (same tenant / project / thread /
  status filter as the memory search), so an answering turn is found even where the
  memory ranking missed its range; such a line still names its range and memory.

Each line of a candidate passage is scored by fusing the passage's dense similarity
(min-max over the pool), the line's lexical coverage of the weighted question terms,
boosts for the value kinds / failures the question asks for, and the score of the
range (memory) it comes from. Lines are packed into the token budget greedily, each
pick preferring lines that cover question terms not covered yet over near-repeats of
lines already chosen. Text stays verbatim: every line is a slice of stored content.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from breadcrumb.processors.decide import QueryIntent
from breadcrumb.processors.extract import Extract, Line, Passage
from breadcrumb.processors.hints import VALUE_KINDS
from breadcrumb.processors.hints import holds_kind as text_holds_kind
from breadcrumb.processors.lexical import weighted_query
from breadcrumb.query_api.dated import dated_events
from breadcrumb.query_api.evidence import drop_superseded, events_by_id, evidence_record
from breadcrumb.query_api.line_rank import (  # line scoring and packing: re-exported
    COVER_BONUS,
    DATE_BOOST,
    FAILURE,
    MAX_LINE_CHARS,
    MAX_LINES,
    REPEAT_PENALTY,
    SPEAKER_BOOST,
    Found,
    Scored,
    line_pool,
    pack,
    pack_pool,
    passage_lead,
    pool_weights,
    score_lines,
)
from breadcrumb.query_api.line_rank import _overlap as _overlap  # the packing test's
from breadcrumb.query_api.scoring import Candidate, Query
from breadcrumb.stores.ports import (
    Hit,
    MemoryStore,
    RawEventStore,
    SearchFilter,
    VectorIndex,
)
from breadcrumb.stores.search_batch import SearchRequest, search_many
from breadcrumb.topics.records import Observation

PASSAGE_POOL = 40  # direct passage search depth, per channel (dense, lexical)
RANGE_POOL = 8  # chunks per followed range, per channel
#: what a line costs beyond its own count once joined under another line: a text's
#: count leaves out its first word's leading space, which a joined line pays
JOIN_TOKENS = 1
#: a compiler / linter diagnostic: ``path:line[:col]: message`` (Go, gcc, tsc, ruff ...)
_DIAGNOSTIC = re.compile(r"^\s*[\w./\\-]+:\d+(?::\d+)?:\s*\S")
_LITERAL = re.compile(r"\w+_\w+|\w[\w-]*\.\w{1,5}\b|[\w-]+/[\w./-]+|\b[a-z]+[A-Z]\w*|`[^`]+`")


def direct_requests(flt: SearchFilter, dense: Sequence[float], text: str,
                    pool: int = PASSAGE_POOL) -> list[SearchRequest]:
    """The direct passage search over the user's sources: dense + lexical chunk searches."""
    return [SearchRequest("chunks", flt, pool, dense=dense),
            SearchRequest("chunks", flt, pool, sparse=weighted_query(text))]


def range_requests(user_id: str, memory_ids: Sequence[str], dense: Sequence[float],
                   text: str, per: int = RANGE_POOL) -> list[SearchRequest]:
    """Dense + lexical chunk searches restricted to each followed memory (two per memory)."""
    sparse = weighted_query(text)
    out = []
    for mid in memory_ids:  # the memory passed the status filter; its chunks follow it
        flt = SearchFilter(user_id=user_id, statuses=None, memory_ids=(mid,))
        out += [SearchRequest("chunks", flt, per, dense=dense),
                SearchRequest("chunks", flt, per, sparse=sparse)]
    return out


def merge(dense_lists: Iterable[list[Hit]], sparse_lists: Iterable[list[Hit]],
          into: dict[str, Found] | None = None) -> dict[str, Found]:
    """Chunk hits of several searches, one :class:`Found` per chunk id (a new dict)."""
    found: dict[str, Found] = dict(into or {})
    for hits, channel in [*((h, "dense") for h in dense_lists),
                          *((h, "sparse") for h in sparse_lists)]:
        dense = channel == "dense"
        for hit in hits:
            if "text" not in hit.payload:
                continue
            old = found.get(hit.id)
            if old is None:  # first seen: one Found, its other channel unset
                passage, mid = _passage(hit.payload), str(hit.payload["memory_id"])
                found[hit.id] = (Found(passage, mid, max(hit.score, -1.0)) if dense
                                 else Found(passage, mid, None, max(hit.score, 0.0)))
            elif dense:
                found[hit.id] = Found(old.passage, old.memory_id,
                                      max(hit.score, old.dense or -1.0), old.sparse)
            else:
                found[hit.id] = Found(old.passage, old.memory_id, old.dense,
                                      max(hit.score, old.sparse or 0.0))
    return found


def _passage(payload: dict[str, object]) -> Passage:
    return Passage(str(payload["event_id"]), int(str(payload["event_index"])),
                   int(str(payload["char_start"])), str(payload["text"]))


def joined_cost(count: Callable[[str], int]) -> Callable[[str], int]:
    """A line's cost inside a newline-joined evidence text (what ``token_cost`` counts)."""
    return lambda text: count(text) + JOIN_TOKENS


@dataclass(frozen=True, slots=True)
class Ports:
    """What semantic extraction reads: the index, the memory rows and the raw events."""

    index: VectorIndex
    memories: MemoryStore
    raw: RawEventStore
    count: Callable[[str], int]


def semantic_evidence(ports: Ports, user_id: str, query: Query, top: list[Candidate],
                      hops: list[Candidate], found: dict[str, Found], budget: int,
                      include_superseded: bool, reason: str,
                      read: Mapping[str, Observation] | None = None,
                      ranges: list[list[Hit]] | None = None) -> list[dict[str, Any]]:
    """Evidence records from the followed ranges and the direct passage search.

    ``read``: memories already read in this recall (the ranked candidates); a line's
    memory is read from the store only when it is not among them. ``ranges``: the hits of
    :func:`range_requests` for ``hops`` when the caller ran them already."""
    if ranges is None:
        requests = range_requests(user_id, [c.memory.id for c in hops], query.dense, query.text)
        ranges = search_many(ports.index, requests)
    results = ranges
    pool = merge(results[0::2], results[1::2], into=found)
    best = top[0].score if top and top[0].score > 0 else 1.0
    range_score = {c.memory.id: max(0.0, c.score / best) for c in top}
    roles = _roles(ports.raw, user_id, pool.values()) if query.intent.role else None
    dated = dated_events(ports.raw, user_id, query.text,
                         (f.passage.event_id for f in pool.values()))
    ranked = line_pool(pool.values(), query.terms, query.intent, range_score, roles, dated,
                       query.text)
    chosen = pack_pool(ranked, query.terms, budget, joined_cost(ports.count))
    known = {**(read or {}), **{c.memory.id: c.memory for c in top}}
    missing = [mid for mid in dict.fromkeys(s.memory_id for s in chosen) if mid not in known]
    known.update({m.id: m for m in ports.memories.get_memories(user_id, missing)})
    groups: dict[str, list[Line]] = {}
    for s in chosen:  # in pick order: the group of the best line comes first
        if s.memory_id in known:  # indexed but not stored: never guess
            groups.setdefault(s.memory_id, []).append(s.line)
    out = []
    for mid, lines in groups.items():
        memory = known[mid]
        lines.sort(key=lambda ln: (ln.event_index, ln.start))
        cut = Extract(tuple(lines), ports.count("\n".join(ln.text for ln in lines)),
                      max(ln.score for ln in lines))
        cut, stale = drop_superseded(cut, memory, include_superseded, ports.count)
        if not cut.lines:
            continue
        how = "followed range" if mid in {c.memory.id for c in hops} else "passage search"
        rng = memory.source_range
        item = evidence_record(mid, rng.thread_id, rng.start_index, rng.end_index, cut,
                               f"{reason}; level 1; semantic ({how}); {len(cut.lines)} "
                               f"line(s), {cut.tokens} tokens")
        if stale:
            item["superseded_values"] = stale
        out.append(item)
    return out


def _roles(raw: RawEventStore, user_id: str, found: Iterable[Found]) -> dict[str, str]:
    """Event id -> role of the candidate passages' events (asked only for speaker questions)."""
    events = events_by_id(raw, user_id, [f.passage.event_id for f in found])
    return {eid: e.role for eid, e in events.items()}


def holds_kind(evidence: list[dict[str, Any]], intent: QueryIntent) -> bool:
    """Whether some evidence line holds a value of a kind the question asks for (or
    the question asks for no kind): a word-exact cut without one missed the value."""
    kinds = intent.kinds & VALUE_KINDS  # a kind no rule names cannot be checked
    failure = intent.failure or "error" in intent.kinds
    if not kinds and not failure:
        return True
    for item in evidence:
        for ln in item["lines"]:
            text = str(ln["text"])[:MAX_LINE_CHARS]
            if failure and (FAILURE.search(text) or _DIAGNOSTIC.match(text)):
                return True  # a failure line the typed-value rules do not name (Go, tsc ...)
            if kinds and text_holds_kind(text, kinds):
                return True
    return False


def needs_meaning(evidence: list[dict[str, Any]], query: Query) -> bool:
    """Whether lines chosen by meaning should replace the word-exact cut: it found
    nothing, the question is not a precise lookup, or it missed the asked value kind."""
    return (not evidence or not precise(query.intent, query.text)
            or not holds_kind(evidence, query.intent))


def with_timestamps(raw: RawEventStore, user_id: str, evidence: list[dict[str, Any]]
                    ) -> list[dict[str, Any]]:
    """Add ``ts`` (first matched event) and ``event_ts`` (every matched event) to each item."""
    events = events_by_id(raw, user_id, [i for it in evidence for i in it["matched_event_ids"]])
    for item in evidence:
        stamps = {eid: events[eid].ts for eid in item["matched_event_ids"] if eid in events}
        item["ts"] = next(iter(stamps.values()), None)
        item["event_ts"] = stamps
    return evidence


def precise(intent: QueryIntent, text: str = "") -> bool:
    """A question for a typed value, a failure, a named literal (``DB_PORT``,
    ``validate-email.ts``, ``retryCount``) or the current value ("… now?") keeps the
    word-exact cut: its one line, the newest version first."""
    if intent.role:  # "what the user said": a speaker's turn, found by meaning
        return False
    return (bool(intent.kinds) or intent.failure or intent.temporal == "newest"
            or bool(_LITERAL.search(text)))


__all__ = [  # the line scoring lives in line_rank; these names are this module's surface too
    "COVER_BONUS", "DATE_BOOST", "MAX_LINES", "REPEAT_PENALTY", "SPEAKER_BOOST", "Found",
    "Ports", "Scored", "direct_requests", "holds_kind", "joined_cost", "merge",
    "needs_meaning", "pack", "passage_lead", "pool_weights", "precise", "range_requests",
    "score_lines", "semantic_evidence", "with_timestamps",
]

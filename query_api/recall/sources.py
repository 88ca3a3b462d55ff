"""Recall: from the chosen memories back to their sources.

Which ranges to follow (the best memory and close ones: multi-hop, computed once per
request), what the answer replaced (history questions), the followed ranges' chunk
searches (one batch, dense + lexical per range), the open windows of the asking tenant
(the fresh tail), and the lines of a range quoting its summary's count. The raw events
of a followed range (level 2) are read through the :class:`~.raw_reads.RangeReader` this
stage hands on, when Extract finds that the chunk lines do not answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from breadcrumb.processors.asked import holds_asked
from breadcrumb.processors.lexical import weighted_query
from breadcrumb.processors.test_runs import counts
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.query_api.recall.as_of import events_as_of
from breadcrumb.query_api.recall.chunk_rows import ChunkRows, search
from breadcrumb.query_api.recall.decide import SUMMARY_OK
from breadcrumb.query_api.recall.passages import Found, Passage, passage_of, split_lines
from breadcrumb.query_api.recall.rank import ratio
from breadcrumb.query_api.recall.raw_reads import RangeReader
from breadcrumb.query_api.recall.stages import (
    Candidate,
    Decision,
    OpenWindow,
    Recalled,
    Retrieved,
)
from breadcrumb.stores.ports import (
    Hit,
    OpenWindowStates,
    RawEventStore,
    SearchFilter,
    VectorIndex,
)
from breadcrumb.stores.vectors.search_batch import SearchRequest
from breadcrumb.topics.records import Event

_CONJUNCTION = re.compile(r"(?i)\b(and|both|as well as|plus)\b|と|および|、")
HOP_RATIO = 0.75  # further ranges are followed when this close to the best
CONJUNCTION_HOP_RATIO = 0.45
RANGE_POOL = 8  # chunks per followed range, per channel
#: chunks per memory the word-exact cut reads (dense + lexical): the top ones of a
#: followed range's searches (``RANGE_POOL`` deep, same filter and query)
CUT_CHUNKS = 4
#: the direct passage search's best passages the word-exact cut reads too: an answering
#: line outside the followed ranges still competes for the budget
FOUND_PASSAGES = 16
FOUND_BY_WORDS = 12  # ... and the best by the lexical channel alone (the cut is by words)
FOUND_KEYWORD = 0.6  # the lexical channel's weight against the dense one (as recall's)
#: At most this many open windows (the most recently active first) are read per recall.
MAX_WINDOWS = 32
#: a question for a value kind (a version, a port, a command, ...) or a failure also cuts the
#: top chunks holding such a value (a failure line) of the ranked memories after the
#: followed ones, up to this many memories in all: the line scorer tells the value's line
#: apart where the memory ranking did not (real sessions a03, a07; held-out hp1)
PRECISE_MEMORIES = 10
#: at most this many lines of a range quoting its summary's count are read
QUOTED_LINES = 8


class Sources:
    """What the Recall stage reads: the index (chunk searches), the raw events, and the
    open windows where the store keeps them."""

    def __init__(self, index: VectorIndex, raw: RawEventStore, rows: ChunkRows | None,
                 states: OpenWindowStates | None) -> None:
        self.index, self.raw, self.rows, self.states = index, raw, rows, states

    def search(self, user_id: str, requests: list[SearchRequest]) -> list[list[Hit]]:
        """The index searches, batched; chunk texts from the store where it keeps them."""
        return search(self.index, self.rows, user_id, requests)

    def recall(self, retrieved: Retrieved, decision: Decision) -> Recalled:
        """Stage 4: the ranges to follow, their chunk searches, the open windows."""
        req, top = retrieved.request, retrieved.top
        follow = decision.classification != SUMMARY_OK and bool(top)
        windows = None
        if self.states is not None and req.mode != "summary" and (
                decision.classification != SUMMARY_OK or not top):  # open windows too
            windows = self.open_window_events(req, retrieved.as_of)
        if not follow:
            return Recalled(retrieved, decision, False, windows=windows)
        hops = hops_of(top, retrieved.query.text)
        if req.include_superseded:  # history asked for: also follow what the answer replaced
            hops += replaced(hops, top)
        memory_ids = [c.memory.id for c in hops]
        query = retrieved.query
        kinds = query.intent.kinds
        failing = query.intent.failure_asked
        later = near_memories(retrieved.ranked, memory_ids)  # ranked after the followed
        near = later if kinds or failing else []
        near_ids = [c.memory.id for c in near]
        searched = self.search(req.user_id, range_requests(
            req.user_id, memory_ids + near_ids, query.dense, query.text))
        ranges = searched[:2 * len(memory_ids)]
        cut = chunk_passages(memory_ids, [hits[:CUT_CHUNKS] for hits in ranges])
        found = found_ranges(retrieved.found, {c.memory.id: c for c in retrieved.ranked}, cut)
        if near:
            found = with_near(found, near, chunk_passages(
                near_ids, [hits[:CUT_CHUNKS] for hits in searched[2 * len(memory_ids):]]),
                lambda text: holds_asked(text, kinds, failing))
        quoted = False
        if query.intent.counted:  # "how many tests …": the summary's count, in its source
            quoting = summary_counts(later, query.intent.counted)
            lines = self.count_lines(req.user_id, quoting, retrieved.as_of)
            quoted = any(lines.values())
            found = with_near(found, [c for c, _q in quoting], lines, lambda _text: True)
        return Recalled(retrieved, decision, True, hops, ranges, cut,
                        RangeReader(self.raw, req.user_id, retrieved.as_of), windows, found,
                        quoted)

    def count_lines(self, user_id: str, quoting: list[tuple[Candidate, list[str]]],
                    as_of: datetime | None) -> dict[str, list[Passage]]:
        """Memory id -> the lines of its range (said by ``as_of``) holding a quote of its
        summary, verbatim: the summary is a map back to the source."""
        out: dict[str, list[Passage]] = {}
        for cand, quotes in quoting:
            rng = cand.memory.source_range
            events = events_as_of(self.raw.get_range(user_id, rng.thread_id, rng.start_index,
                                                      rng.end_index), as_of)
            out[cand.memory.id] = lines_quoting(events, quotes)
        return out

    def open_window_events(self, req: RecallRequest, as_of: datetime | None = None
                           ) -> list[tuple[OpenWindow, list[Event]]]:
        """The tenant's open windows (filtered like recall) with their events (said by
        ``as_of`` only, when given).

        A tag filter excludes the fresh tail: an open window has no tags yet."""
        if req.tags or self.states is None:
            return []
        windows = open_windows(self.states.list_open_states(req.user_id), req.user_id,
                               req.project_id, req.thread_id)
        read = [(w, events_as_of(self.raw.get_range(req.user_id, w.thread_id, w.start, w.end),
                                 as_of)) for w in windows]
        return [(w, events) for w, events in read if events or as_of is None]


def hops_of(top: list[Candidate], query: str) -> list[Candidate]:
    """The best memory, plus close ones (or looser ones when the question has parts)."""
    best = top[0].score
    ratio = CONJUNCTION_HOP_RATIO if _CONJUNCTION.search(query) else HOP_RATIO
    return [top[0]] + [c for c in top[1:3] if best > 0 and c.score >= best * ratio]


def near_memories(ranked: list[Candidate], followed: list[str],
                  n: int = PRECISE_MEMORIES) -> list[Candidate]:
    """The next best candidates after the followed ones, up to ``n`` memories in all."""
    return [c for c in ranked[:n] if c.memory.id not in followed]


def with_near(found: list[tuple[Candidate, list[Passage]]], near: list[Candidate],
              passages: dict[str, list[Passage]], keep: Callable[[str], bool]
              ) -> list[tuple[Candidate, list[Passage]]]:
    """``found`` plus the near memories' ``passages`` whose text ``keep`` accepts (a
    value of the asked kinds: :func:`held`), joined to a memory already there."""
    out = [(c, list(ps)) for c, ps in found]
    at = {c.memory.id: ps for c, ps in out}
    for cand in near:
        seen = {(p.event_id, p.offset) for p in at.get(cand.memory.id, [])}
        new = [p for p in passages.get(cand.memory.id, [])
               if (p.event_id, p.offset) not in seen and keep(p.text)]
        if not new:
            continue
        mine = at.get(cand.memory.id)
        if mine is None:
            mine = at[cand.memory.id] = []
            out.append((cand, mine))
        mine += new
    return out


def summary_counts(ranked: list[Candidate], counted: str
                   ) -> list[tuple[Candidate, list[str]]]:
    """The candidates whose summary quotes a count of ``counted`` (``Ran 73 tests across
    10 files``: the observer quotes a test run's counts), with the counts quoted (s05: the
    memory ranked 7th, its count line outside its best chunks)."""
    pattern = counts(counted)
    out = []
    for cand in ranked:
        quotes = list(dict.fromkeys(m.group(0) for m in pattern.finditer(cand.memory.summary)))
        if quotes:
            out.append((cand, quotes))
    return out


def lines_quoting(events: Sequence[Event], quotes: list[str]) -> list[Passage]:
    """Each line of ``events`` holding one of ``quotes`` where it stands whole (not inside
    ``173 tests``), at most :data:`QUOTED_LINES`."""
    quoted = re.compile("|".join(r"(?<![\w.])" + re.escape(q) for q in quotes))
    out: list[Passage] = []
    for event in events:
        if quoted.search(event.content) is None:  # most events: no line split
            continue
        for start, _end, line in split_lines(event):
            if quoted.search(line) is not None:
                out.append(Passage(event.event_id, event.index or 0, start, line, event.kind,
                                   event.role))
                if len(out) >= QUOTED_LINES:
                    return out
    return out


def replaced(hops: list[Candidate], top: list[Candidate]) -> list[Candidate]:
    """Candidates whose facts the followed memories superseded (for history questions)."""
    linked = {str(v.get("memory_id")) for c in hops
              for v in (c.memory.metadata.get("supersedes_facts") or {}).values()
              if isinstance(v, dict)}
    linked |= {str(c.memory.supersedes_memory_id) for c in hops if c.memory.supersedes_memory_id}
    chosen = {c.memory.id for c in hops}
    return [c for c in top if c.memory.id in linked and c.memory.id not in chosen]


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


def found_ranges(found: dict[str, Found], ranked: dict[str, Candidate],
                 cut: dict[str, list[Passage]], n: int = FOUND_PASSAGES
                 ) -> list[tuple[Candidate, list[Passage]]]:
    """The direct passage search's ``n`` best passages (dense min-max over the pool plus
    :data:`FOUND_KEYWORD` times lexical over its best, as the raw-chunk search ranks) and
    its :data:`FOUND_BY_WORDS` best by the lexical channel, for the word-exact cut: one of
    a followed range joins that range's passages (``cut``, in place); the others, grouped
    by their memory (a ranked candidate), are ranges of their own, best first."""
    dense = [f.dense for f in found.values() if f.dense is not None]
    lo, hi = (min(dense), max(dense)) if dense else (0.0, 1.0)
    top = max((f.sparse or 0.0 for f in found.values()), default=0.0)

    def fused(f: Found) -> float:
        d = 0.0 if f.dense is None else (1.0 if hi <= lo else (f.dense - lo) / (hi - lo))
        return d + FOUND_KEYWORD * ratio(f.sparse, top)

    by_words = sorted(found.values(), key=lambda f: -(f.sparse or 0.0))[:FOUND_BY_WORDS]
    best = sorted(found.values(), key=fused, reverse=True)[:n]
    out: dict[str, list[Passage]] = {}
    for f in dict.fromkeys([*best, *(f for f in by_words if f.sparse)]):
        passages = cut.get(f.memory_id)
        if passages is None:
            if f.memory_id not in ranked:  # not a candidate (filtered out): never guess
                continue
            passages = out.setdefault(f.memory_id, [])
        if all((p.event_id, p.offset) != (f.passage.event_id, f.passage.offset)
               for p in passages):
            passages.append(f.passage)
    return [(ranked[mid], passages) for mid, passages in out.items()]


def chunk_passages(memory_ids: list[str], results: list[list[Hit]]) -> dict[str, list[Passage]]:
    """Each memory's passages from its two (dense, lexical) chunk searches."""
    out = {}
    for i, mid in enumerate(memory_ids):
        unique = {h.id: h for h in results[2 * i] + results[2 * i + 1]}
        out[mid] = [passage_of(h.payload) for h in unique.values() if "text" in h.payload]
    return out


def open_windows(states: Sequence[tuple[str, dict[str, Any]]], user_id: str,
                 project_id: str | None = None, thread_id: str | None = None
                 ) -> list[OpenWindow]:
    """The tenant's open windows (newest activity first), filtered like recall."""
    out = []
    for _key, state in states:
        pending = state.get("pending") or []
        if state.get("user_id") != user_id or not pending:
            continue
        if project_id is not None and state.get("project_id") != project_id:
            continue
        if thread_id is not None and state.get("thread_id") != thread_id:
            continue
        indices = [int(p[0]) for p in pending]
        out.append(OpenWindow(user_id, str(state["thread_id"]), state.get("project_id"),
                              min(indices), max(indices), str(pending[-1][4])))
    out.sort(key=lambda w: (w.last_ts, w.thread_id), reverse=True)
    return out[:MAX_WINDOWS]

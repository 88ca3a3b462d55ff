"""The learned ranker's candidates: every line Recall put within reach, once.

The lines of every followed range (its raw events, read once through Recall's
:class:`~query_api.recall.stages.RangeReader`), and the passages of other memories the
direct passage search and the near-memory reads found (:attr:`Recalled.found`,
:attr:`Retrieved.found`). Each line carries what the pool knows of it: the cosine of the
chunk it was found in, its memory's rank, its event's kind and role, the structural line
above it that names it (a diff's ``+++ b/path``, a patch's ``*** Update File:``, the call
a tool's output answers). Nothing is rewritten: a candidate is a slice of stored content.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from breadcrumb.processors.calls import calls_of
from breadcrumb.query_api.recall.extract.learned.features import Candidate
from breadcrumb.query_api.recall.extract.superseded import holds_value
from breadcrumb.query_api.recall.passages import Found, Passage, split_lines
from breadcrumb.query_api.recall.stages import Recalled
from breadcrumb.topics.records import Event, Observation

#: a line no word of which is a letter or digit (``.``, ``});``) answers nothing
_WORDY = re.compile(r"\w")
#: lines that name the file the lines below them belong to
FILE_HEADER = re.compile(r"^(\+\+\+ b/\S|\*\*\* (Update|Add|Delete) File: |diff --git |"
                          r"(Edit|Write|Create|Update)\w* \S+\.\w+)")
#: at most this many lines of one event are candidates (a 2,000-line log: its first
#: and last lines, and every line holding a question term, are read by the features)
MAX_EVENT_LINES = 400


@dataclass(frozen=True, slots=True)
class Pool:
    """The candidates and the memories they belong to."""

    lines: list[Candidate]
    memories: dict[str, Observation]


def candidate_pool(recalled: Recalled) -> Pool:
    """Every distinct line of the followed ranges and of the passages found elsewhere."""
    retrieved = recalled.retrieved
    ranked = retrieved.ranked
    rank = {c.memory.id: i for i, c in enumerate(ranked)}
    best = ranked[0].score if ranked and ranked[0].score > 0 else 1.0
    share = {c.memory.id: max(0.0, c.score / best) for c in ranked}
    memories = {c.memory.id: c.memory for c in ranked}
    cosines = _chunk_scores(recalled)
    seen: set[tuple[str, int]] = set()
    out: list[Candidate] = []

    def meta(mid: str) -> tuple[int, float]:
        return rank.get(mid, 99), share.get(mid, 0.0)

    if recalled.events is not None:
        for hop in recalled.hops:
            events = recalled.events.events(hop.memory)
            calls = calls_of(events)
            stale = _stale(hop.memory)
            for event in events:
                header = calls.get(event.event_id, "")
                out += _event_lines(event, hop.memory.id, meta(hop.memory.id), True,
                                    cosines, header, stale, seen)
    others: list[Found] = list(retrieved.found.values())
    others += [Found(p, cand.memory.id) for cand, passages in recalled.found for p in passages]
    for found in others:
        mid = found.memory_id
        memory = memories.get(mid)
        stale = _stale(memory) if memory is not None else ()
        out += _passage_lines(found, meta(mid), stale, seen)
    return Pool(out, memories)


def _chunk_scores(recalled: Recalled) -> dict[str, list[tuple[int, int, float, bool]]]:
    """Event id -> (start, end, cosine, lexical) of each chunk the followed ranges'
    searches found (a hop's dense hits, then its lexical ones)."""
    out: dict[str, list[tuple[int, int, float, bool]]] = {}
    for n, hits in enumerate(recalled.ranges):
        dense = n % 2 == 0
        for hit in hits:
            payload = hit.payload
            if "event_id" not in payload or "char_start" not in payload:
                continue
            start = int(payload["char_start"])
            end = start + len(str(payload.get("text", "")))
            out.setdefault(str(payload["event_id"]), []).append(
                (start, end, hit.score if dense else float("nan"), not dense))
    return out


def _event_lines(event: Event, memory_id: str, meta: tuple[int, float], followed: bool,
                 cosines: dict[str, list[tuple[int, int, float, bool]]], call: str,
                 stale: Iterable[str], seen: set[tuple[str, int]]
                 ) -> list[Candidate]:
    chunks = cosines.get(event.event_id, [])
    rows = split_lines(event)[:MAX_EVENT_LINES]
    out = []
    header = call
    for number, (start, end, text) in enumerate(rows):
        if FILE_HEADER.match(text):
            header = text
        if (event.event_id, start) in seen or not _WORDY.search(text):
            continue
        seen.add((event.event_id, start))
        dense, sparse = _cover(chunks, start)
        out.append(Candidate(memory_id, event.event_id, _index(event), start, end, text,
                             event.kind, event.role, meta[0], meta[1], followed, number,
                             dense, sparse, header if header != text else call,
                             any(holds_value(text, v) for v in stale)))
    return out


def _passage_lines(found: Found, meta: tuple[int, float], stale: Iterable[str],
                   seen: set[tuple[str, int]]) -> list[Candidate]:
    passage: Passage = found.passage
    out = []
    header = ""
    for number, (start, end, text) in enumerate(split_lines(passage)):
        if FILE_HEADER.match(text):
            header = text
        if (passage.event_id, start) in seen or not _WORDY.search(text):
            continue
        seen.add((passage.event_id, start))
        out.append(Candidate(found.memory_id, passage.event_id, passage.event_index, start,
                             end, text, passage.kind, passage.role, meta[0], meta[1], False,
                             number + (1 if passage.offset else 0), found.dense,
                             found.sparse is not None, header if header != text else "",
                             any(holds_value(text, v) for v in stale)))
    return out


def _cover(chunks: list[tuple[int, int, float, bool]], start: int) -> tuple[float | None, bool]:
    """The best cosine of a found chunk holding offset ``start``, and whether the lexical
    search found one."""
    dense: float | None = None
    sparse = False
    for lo, hi, cosine, lexical in chunks:
        if lo <= start < hi:
            sparse = sparse or lexical
            if cosine == cosine and (dense is None or cosine > dense):  # not NaN
                dense = cosine
    return dense, sparse


def _stale(memory: Observation) -> tuple[str, ...]:
    facts = memory.metadata.get("superseded_facts") or {}
    return tuple(sorted({str(f.get("value")) for f in facts.values()
                         if isinstance(f, dict) and f.get("value")}))


def _index(event: Event) -> int:
    return event.index if event.index is not None else -1

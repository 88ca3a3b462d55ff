"""The learned ranker's candidates: every line Recall put within reach, once.

The lines of every followed range (its raw events, read once through Recall's
:class:`~query_api.recall.raw_reads.RangeReader`), and the passages of other memories the
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
#: the raw-search rank of a line no search found
NO_RANK = 999
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
    cosines = Chunks(recalled)
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
        out += _passage_lines(found, meta(mid), stale, cosines, seen)
    return Pool(out, memories)


class Chunks:
    """Every chunk a search of this recall found (the followed ranges' dense and lexical
    searches, the direct passage search), each with its raw cosine, its lexical score,
    and the score the raw-chunk search would rank it by (min-max cosine + 0.6 x lexical
    share of the best, as ``eval.methods.fuse``) with its rank among them."""

    KEYWORD = 0.6

    def __init__(self, recalled: Recalled) -> None:
        found: dict[tuple[str, int], list[float | None]] = {}

        def add(event_id: str, start: int, end: int, dense: float | None,
                sparse: float | None) -> None:
            key = (event_id, start)
            old = found.setdefault(key, [float(end), None, None])
            if dense is not None:
                old[1] = dense if old[1] is None else max(old[1], dense)
            if sparse is not None:
                old[2] = sparse if old[2] is None else max(old[2], sparse)

        for n, hits in enumerate(recalled.ranges):
            for hit in hits:
                payload = hit.payload
                if "event_id" in payload and "char_start" in payload:
                    start = int(payload["char_start"])
                    end = start + len(str(payload.get("text", "")))
                    add(str(payload["event_id"]), start, end,
                        hit.score if n % 2 == 0 else None, None if n % 2 == 0 else hit.score)
        for f in recalled.retrieved.found.values():
            p = f.passage
            add(p.event_id, p.offset, p.offset + len(p.text), f.dense, f.sparse)
        dense = [v[1] for v in found.values() if v[1] is not None]
        lo, hi = (min(dense), max(dense)) if dense else (0.0, 1.0)
        top = max((v[2] for v in found.values() if v[2] is not None), default=0.0)
        fused = {}
        for key, (_end, d, sp) in found.items():
            vector = 0.0 if d is None else (1.0 if hi <= lo else (d - lo) / (hi - lo))
            fused[key] = vector + self.KEYWORD * ((sp or 0.0) / top if top > 0 else 0.0)
        order = sorted(fused, key=lambda k: -fused[k])
        rank = {k: i for i, k in enumerate(order)}
        self.by_event: dict[str, list[tuple[int, int, float | None, bool, float, int]]] = {}
        for (eid, start), (stop, d, sp) in found.items():
            self.by_event.setdefault(eid, []).append(
                (start, int(stop or start), d, sp is not None, fused[(eid, start)],
                 rank[(eid, start)]))

    def cover(self, event_id: str, start: int) -> tuple[float | None, bool, float, int]:
        """Of the chunks holding offset ``start`` of the event: the best cosine, whether
        the lexical search found one, the best raw-search score and rank (none: 0, 999)."""
        dense: float | None = None
        sparse, raw, rank = False, 0.0, NO_RANK
        for lo, hi, cosine, lexical, fused, at in self.by_event.get(event_id, ()):
            if lo <= start < hi:
                sparse = sparse or lexical
                if cosine is not None and (dense is None or cosine > dense):
                    dense = cosine
                raw, rank = max(raw, fused), min(rank, at)
        return dense, sparse, raw, rank


def _event_lines(event: Event, memory_id: str, meta: tuple[int, float], followed: bool,
                 cosines: Chunks, call: str, stale: Iterable[str], seen: set[tuple[str, int]]
                 ) -> list[Candidate]:
    """The lines of a followed range's event (the first :data:`MAX_EVENT_LINES`)."""
    passage = Passage(event.event_id, _index(event), 0, event.content, event.kind, event.role)
    return _lines(passage, memory_id, meta, followed, cosines, stale, seen, call=call,
                  limit=MAX_EVENT_LINES)


def _passage_lines(found: Found, meta: tuple[int, float], stale: Iterable[str],
                   cosines: Chunks, seen: set[tuple[str, int]]) -> list[Candidate]:
    """The lines of a passage found outside the followed ranges (its own search scores
    where no chunk search of the recall covers a line)."""
    passage = found.passage
    return _lines(passage, found.memory_id, meta, False, cosines, stale, seen,
                  first_no=1 if passage.offset else 0, dense=found.dense,
                  sparse=found.sparse is not None)


def _lines(passage: Passage, memory_id: str, meta: tuple[int, float], followed: bool,
           cosines: Chunks, stale: Iterable[str], seen: set[tuple[str, int]], *,
           call: str = "", limit: int | None = None, first_no: int = 0,
           dense: float | None = None, sparse: bool = False) -> list[Candidate]:
    """Each wordy line of ``passage`` not seen before, with the file header above it (else
    ``call``), the chunk scores covering it, and whether it holds a replaced value."""
    out = []
    header = call
    for number, (start, end, text) in enumerate(split_lines(passage)[:limit]):
        if FILE_HEADER.match(text):
            header = text
        if (passage.event_id, start) in seen or not _WORDY.search(text):
            continue
        seen.add((passage.event_id, start))
        cosine, lexical, raw, rank = cosines.cover(passage.event_id, start)
        out.append(Candidate(memory_id, passage.event_id, passage.event_index, start, end,
                             text, passage.kind, passage.role, meta[0], meta[1], followed,
                             number + first_no, dense if cosine is None else cosine,
                             lexical or sparse, header if header != text else call,
                             any(holds_value(text, v) for v in stale), raw, rank))
    return out


def _stale(memory: Observation) -> tuple[str, ...]:
    facts = memory.metadata.get("superseded_facts") or {}
    return tuple(sorted({str(f.get("value")) for f in facts.values()
                         if isinstance(f, dict) and f.get("value")}))


def _index(event: Event) -> int:
    return event.index if event.index is not None else -1

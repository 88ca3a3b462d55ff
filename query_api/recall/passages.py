"""What recall hands from stage to stage about source text: passages, lines, cuts.

A :class:`Passage` is a verbatim piece of one event (its whole content, or a stored chunk
of it); a :class:`Line` is one line of one event located by character offsets; an
:class:`Extract` is the lines chosen for an answer. :class:`Found` is a passage a chunk
search found, with the scores its searches gave it. Nothing here is ever rewritten:
every line is a slice of stored content.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from breadcrumb.stores.ports import Hit
from breadcrumb.topics.records import Event


@dataclass(frozen=True, slots=True)
class Passage:
    """A verbatim piece of one event: the whole content, or a stored chunk of it."""

    event_id: str
    event_index: int
    offset: int  # where ``text`` starts in the event's content
    text: str
    kind: str = ""
    role: str = ""


@dataclass(frozen=True, slots=True)
class Line:
    """One line of one event, located by character offsets into its content."""

    event_id: str
    event_index: int
    start: int
    end: int
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class Extract:
    """The chosen lines (in source order) and their cost."""

    lines: tuple[Line, ...]
    tokens: int
    best_score: float = 0.0

    @classmethod
    def joined(cls, lines: Iterable[Line], count: Callable[[str], int],
               best_score: float = 0.0) -> Extract:
        """``lines`` (in the order given) costed as their newline-joined text, which is
        what the evidence's ``extracted_text`` is and what ``token_cost`` counts."""
        kept = tuple(lines)
        return cls(kept, count("\n".join(line.text for line in kept)), best_score)

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    @property
    def event_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for line in self.lines:
            seen.setdefault(line.event_id, None)
        return list(seen)


@dataclass(frozen=True, slots=True)
class Found:
    """A candidate passage with the scores its searches gave it."""

    passage: Passage
    memory_id: str
    dense: float | None = None  # cosine to the question
    sparse: float | None = None  # lexical channel score


def passages_from_events(events: Iterable[Event]) -> list[Passage]:
    """Every event as one passage (offset 0)."""
    return [
        Passage(e.event_id, e.index if e.index is not None else -1, 0, e.content, e.kind, e.role)
        for e in events
    ]


def passage_of(payload: dict[str, Any]) -> Passage:
    """The passage a chunk hit's payload describes (see ``chunk_rows.payload``)."""
    return Passage(str(payload["event_id"]), int(payload["event_index"]),
                   int(payload["char_start"]), str(payload["text"]))


def split_lines(event: Event | Passage) -> list[tuple[int, int, str]]:
    """(start, end, text) of every non-blank line; ``content[start:end] == text``."""
    text, base = (event.content, 0) if isinstance(event, Event) else (event.text, event.offset)
    out: list[tuple[int, int, str]] = []
    pos = 0
    for raw in text.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        if line.strip():
            out.append((base + pos, base + pos + len(line), line))
        pos += len(raw)
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
                passage, mid = passage_of(hit.payload), str(hit.payload["memory_id"])
                found[hit.id] = (Found(passage, mid, max(hit.score, -1.0)) if dense
                                 else Found(passage, mid, None, max(hit.score, 0.0)))
            elif dense:
                found[hit.id] = Found(old.passage, old.memory_id,
                                      max(hit.score, old.dense or -1.0), old.sparse)
            else:
                found[hit.id] = Found(old.passage, old.memory_id, old.dense,
                                      max(hit.score, old.sparse or 0.0))
    return found


def evidence_record(
    memory_id: str | None, thread_id: str, start: int, end: int, cut: Extract, reason: str
) -> dict[str, Any]:
    """A RecalledEvidence (contract)."""
    return {
        "memory_id": memory_id,
        "source_thread_id": thread_id,
        "source_start_index": start,
        "source_end_index": end,
        "matched_event_ids": cut.event_ids,
        "extracted_text": cut.text,
        # which event each line was cut from (the brief view groups lines by event)
        "lines": [{"event_id": ln.event_id, "event_index": ln.event_index, "text": ln.text}
                  for ln in cut.lines],
        "reason": f"{reason}, {cut.tokens} tokens" if "tokens" not in reason else reason,
    }

"""Cut each thread into source ranges: a pure, restartable window over event refs.

The open window of a thread is a :class:`ThreadState` (ids and counts, no content), so
it fits in a Faust table and survives a restart through ``to_dict`` / ``from_dict``.
:func:`feed` appends one indexed event and returns the ranges that closed;
:func:`flush` closes the open window (idle timeout, end of ingest). Both are
deterministic: the same events in the same order give the same ranges.

Cutting rules, in the order :func:`feed` applies them:

1. **Oversized**: an event with more than ``max_tokens`` tokens gets a range of its
   own. The open window is closed first (reason ``oversized``, even if it holds fewer
   than ``min_events``: it cannot merge with the oversized event and the range before
   it has already been emitted), then the event alone (reason ``oversized``).
2. **Topic change**: a ``topic_change`` event starts a new range when the window
   already holds ``>= min_events`` (the window closes with reason ``topic_change``).
   With fewer it simply joins the window, where it is a boundary marker.
3. **Max tokens**: if the event does not fit in the window's token budget, the window
   is cut right after its last boundary marker such that the cut-off head holds
   ``>= min_events`` and the remaining tail plus the new event fits (reason
   ``boundary``); without such a marker the whole window closes (reason
   ``max_tokens``; it may hold fewer than ``min_events`` when events are large:
   it cannot merge forward, that would break the budget).
4. The event joins the window. ``session_end`` then closes the whole window at once
   (reason ``session_end``).
5. **Max events**: a window holding ``max_events`` is cut right after its last boundary
   marker that leaves ``>= min_events`` in the closed range (reason ``boundary``),
   otherwise as a whole (reason ``max_events``).

Ranges shorter than ``min_events`` therefore only come from rules 1 and 3 and from
:func:`flush` / ``session_end`` (a short tail: the previous range was already emitted
and cannot be reopened). Ranges of a thread are contiguous in index order; every fed
event lands in exactly one range; no event is ever split.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from breadcrumb.topics.records import BOUNDARY_KINDS, ClosedRange, Event, SourceRange


@dataclass(frozen=True)
class SegmenterConfig:
    """Range limits (settings: ``segment_max_events`` etc.)."""

    max_events: int = 40
    max_tokens: int = 6000
    min_events: int = 10

    def __post_init__(self) -> None:
        if self.max_events < 1 or self.max_tokens < 1 or self.min_events < 1:
            raise ValueError(f"segmenter limits must be >= 1, got {self}")
        if self.min_events > self.max_events:
            raise ValueError(f"min_events > max_events in {self}")


@dataclass(frozen=True)
class PendingEvent:
    """A reference to one event in the open window (no content)."""

    index: int
    event_id: str
    tokens: int
    kind: str
    ts: str

    def to_list(self) -> list[Any]:
        """Compact JSON form: ``[index, event_id, tokens, kind, ts]``."""
        return [self.index, self.event_id, self.tokens, self.kind, self.ts]

    @classmethod
    def from_list(cls, data: list[Any]) -> PendingEvent:
        """Inverse of :meth:`to_list`."""
        index, event_id, tokens, kind, ts = data
        return cls(int(index), str(event_id), int(tokens), str(kind), str(ts))


@dataclass(frozen=True)
class ThreadState:
    """Per-thread state: the next free index and the open window."""

    user_id: str
    thread_id: str
    project_id: str | None = None
    next_index: int = 0
    pending: tuple[PendingEvent, ...] = ()
    last_ts: str | None = None

    @classmethod
    def new(cls, user_id: str, thread_id: str, project_id: str | None = None) -> ThreadState:
        """The state of a thread that has seen no event yet."""
        return cls(user_id=user_id, thread_id=thread_id, project_id=project_id)

    @property
    def pending_tokens(self) -> int:
        """Tokens in the open window."""
        return sum(p.tokens for p in self.pending)

    def to_dict(self) -> dict[str, Any]:
        """A small JSON-able dict (ids and counts only) for a Faust table."""
        return {
            "user_id": self.user_id,
            "thread_id": self.thread_id,
            "project_id": self.project_id,
            "next_index": self.next_index,
            "pending": [p.to_list() for p in self.pending],
            "last_ts": self.last_ts,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ThreadState:
        """Inverse of :meth:`to_dict`."""
        return cls(
            user_id=str(data["user_id"]),
            thread_id=str(data["thread_id"]),
            project_id=data.get("project_id"),
            next_index=int(data.get("next_index") or 0),
            pending=tuple(PendingEvent.from_list(p) for p in data.get("pending") or ()),
            last_ts=data.get("last_ts"),
        )


def feed(
    state: ThreadState, event: Event, cfg: SegmenterConfig
) -> tuple[ThreadState, list[ClosedRange]]:
    """Append one indexed, token-counted event; return the new state and closed ranges.

    Raises ``ValueError`` when the event has no index or tokens, belongs to another
    thread, or does not come after the window's last event (a caller bug).
    """
    ref = _pending_ref(state, event)
    window = list(state.pending)
    out: list[ClosedRange] = []
    # _close reads only the ids of ``state``; last_ts is set with the window, in one copy
    if ref.tokens > cfg.max_tokens:
        if window:
            out.append(_close(state, window, "oversized"))
        out.append(_close(state, [ref], "oversized"))
        return replace(state, pending=(), last_ts=event.ts), out
    if ref.kind == "topic_change" and len(window) >= cfg.min_events:
        out.append(_close(state, window, "topic_change"))
        window = []
    elif sum(p.tokens for p in window) + ref.tokens > cfg.max_tokens:
        window = _cut_for_tokens(state, window, ref, cfg, out)
    window.append(ref)
    if ref.kind == "session_end":
        out.append(_close(state, window, "session_end"))
        window = []
    elif len(window) >= cfg.max_events:
        window = _cut_for_events(state, window, cfg, out)
    return replace(state, pending=tuple(window), last_ts=event.ts), out


def flush(state: ThreadState, reason: str) -> tuple[ThreadState, list[ClosedRange]]:
    """Close the open window with ``reason`` (session_end, idle, flush).

    An empty window closes nothing. The closed range may be shorter than
    ``min_events``: the range before it was already emitted and cannot be reopened.
    """
    if not state.pending:
        return state, []
    closed = _close(state, list(state.pending), reason)
    return replace(state, pending=()), [closed]


def _pending_ref(state: ThreadState, event: Event) -> PendingEvent:
    if event.index is None or event.tokens is None:
        raise ValueError(f"event {event.event_id!r} must have index and tokens before feed")
    if (event.user_id, event.thread_id) != (state.user_id, state.thread_id):
        raise ValueError(
            f"event {event.event_id!r} of {event.user_id}/{event.thread_id} fed to the "
            f"state of {state.user_id}/{state.thread_id}"
        )
    if state.pending and event.index <= state.pending[-1].index:
        raise ValueError(
            f"event {event.event_id!r} index {event.index} does not follow "
            f"index {state.pending[-1].index} in thread {state.thread_id}"
        )
    return PendingEvent(event.index, event.event_id, event.tokens, event.kind, event.ts)


def _cut_for_tokens(
    state: ThreadState,
    window: list[PendingEvent],
    ref: PendingEvent,
    cfg: SegmenterConfig,
    out: list[ClosedRange],
) -> list[PendingEvent]:
    """Make room for ``ref``: cut after a boundary if that suffices, else close all."""
    budget = cfg.max_tokens - ref.tokens
    tail_tokens = 0
    # Walk back from the end: position i is a valid cut when the head window[:i+1]
    # holds >= min_events and the tail window[i+1:] fits next to ref.
    for i in range(len(window) - 1, cfg.min_events - 2, -1):
        if tail_tokens > budget:
            break
        if window[i].kind in BOUNDARY_KINDS:
            out.append(_close(state, window[: i + 1], "boundary"))
            return window[i + 1 :]
        tail_tokens += window[i].tokens
    out.append(_close(state, window, "max_tokens"))
    return []


def _cut_for_events(
    state: ThreadState, window: list[PendingEvent], cfg: SegmenterConfig, out: list[ClosedRange]
) -> list[PendingEvent]:
    """The window is full: cut after its last boundary keeping >= min_events, or all."""
    for i in range(len(window) - 1, cfg.min_events - 2, -1):
        if window[i].kind in BOUNDARY_KINDS:
            out.append(_close(state, window[: i + 1], "boundary"))
            return window[i + 1 :]
    out.append(_close(state, window, "max_events"))
    return []


def _close(state: ThreadState, refs: list[PendingEvent], reason: str) -> ClosedRange:
    return ClosedRange(
        user_id=state.user_id,
        project_id=state.project_id,
        source_range=SourceRange(state.thread_id, refs[0].index, refs[-1].index),
        event_ids=tuple(p.event_id for p in refs),
        reason=reason,
    )

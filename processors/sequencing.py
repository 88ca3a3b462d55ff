"""Index assignment and the per-event step shared by the embedded runner and Faust.

Pure: the caller owns the state (a dict in embedded mode, a Faust table in cluster
mode) and must check same-``event_id`` duplicates before calling (that needs the raw
store). Replaying the same events in the same order reproduces the same indices.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from breadcrumb.processors.segmenter import SegmenterConfig, ThreadState, feed, flush
from breadcrumb.processors.tokens import TokenCounter
from breadcrumb.topics.records import ClosedRange, Event


@dataclass(frozen=True)
class Sequenced:
    """The event with its index and token count set."""

    event: Event


@dataclass(frozen=True)
class Rejected:
    """Why the event was refused (goes to the dead-letter store)."""

    reason: str
    field: str | None


def assign_index(
    state: ThreadState, event: Event, count_tokens: TokenCounter
) -> tuple[ThreadState, Sequenced | Rejected]:
    """Give ``event`` its index and token count, or reject a taken explicit index.

    No index: the event gets ``state.next_index``. An explicit index below
    ``next_index`` is taken (indices only grow; the caller has already ruled out a
    retry of the same event_id). An explicit index at or above it is accepted, gaps
    included, and ``next_index`` moves past it. ``tokens`` is kept when given, else
    counted from the content. The state takes the event's project_id if it has none.
    Raises ``ValueError`` if the event belongs to another thread than the state.
    """
    if (event.user_id, event.thread_id) != (state.user_id, state.thread_id):
        raise ValueError(
            f"event {event.event_id!r} of {event.user_id}/{event.thread_id} sequenced "
            f"in the state of {state.user_id}/{state.thread_id}"
        )
    index = state.next_index if event.index is None else event.index
    if index < state.next_index:
        reason = f"index {index} is already taken in thread {state.thread_id}"
        return state, Rejected(reason, field="index")
    tokens = event.tokens if event.tokens is not None else count_tokens(event.content)
    project_id = state.project_id if state.project_id is not None else event.project_id
    new_state = replace(state, next_index=index + 1, project_id=project_id)
    return new_state, Sequenced(event.with_index(index, tokens))


def step(
    state: ThreadState, event: Event, cfg: SegmenterConfig, count_tokens: TokenCounter
) -> tuple[ThreadState, Sequenced | Rejected, list[ClosedRange]]:
    """Sequence one event and feed it to the segmenter.

    A rejected event leaves the state unchanged and closes nothing. A ``session_end``
    event is included in its range and closes the window at once.
    """
    state, result = assign_index(state, event, count_tokens)
    if isinstance(result, Rejected):
        return state, result, []
    state, ranges = feed(state, result.event, cfg)
    if result.event.kind == "session_end":
        state, tail = flush(state, "session_end")
        ranges.extend(tail)
    return state, result, ranges

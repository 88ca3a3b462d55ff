"""Sequencing: index assignment, taken indices, explicit gaps, the per-event step."""

from __future__ import annotations

import pytest

from breadcrumb.processors.segmenter import SegmenterConfig, ThreadState
from breadcrumb.processors.sequencing import Rejected, Sequenced, assign_index, step
from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.topics.records import Event


def ev(event_id: str, index: int | None = None, **extra: object) -> Event:
    data: dict[str, object] = {
        "event_id": event_id,
        "user_id": "u1",
        "thread_id": "t1",
        "ts": "2024-05-01T00:00:00Z",
        "role": "user",
        "kind": "message",
        "content": "hello world 你好",
        "index": index,
        **extra,
    }
    return Event.from_dict(data)


def sequenced(result: Sequenced | Rejected) -> Event:
    assert isinstance(result, Sequenced), result
    return result.event


def never_called(text: str) -> int:
    raise AssertionError(f"count_tokens called on {text!r}")


def test_events_without_index_get_consecutive_indices() -> None:
    state = ThreadState.new("u1", "t1")
    indices = []
    for n in range(3):
        state, result = assign_index(state, ev(f"e{n}"), estimate_tokens)
        indices.append(sequenced(result).index)
    assert indices == [0, 1, 2]
    assert state.next_index == 3


def test_explicit_gaps_are_kept_and_next_index_moves_past_them() -> None:
    state = ThreadState.new("u1", "t1")
    state, r0 = assign_index(state, ev("a", 0), estimate_tokens)
    state, r5 = assign_index(state, ev("b", 5), estimate_tokens)
    state, auto = assign_index(state, ev("c"), estimate_tokens)
    assert [sequenced(r).index for r in (r0, r5, auto)] == [0, 5, 6]
    assert state.next_index == 7


def test_taken_index_is_rejected_and_state_unchanged() -> None:
    state = ThreadState.new("u1", "t1")
    state, _ = assign_index(state, ev("a", 0), estimate_tokens)
    state, _ = assign_index(state, ev("b", 4), estimate_tokens)
    for taken in (0, 3, 4):  # 3 is a gap, but indices only grow: it is taken too
        after, result = assign_index(state, ev("x", taken), estimate_tokens)
        assert result == Rejected(f"index {taken} is already taken in thread t1", field="index")
        assert after == state


def test_tokens_given_are_kept_else_counted() -> None:
    state = ThreadState.new("u1", "t1")
    state, given = assign_index(state, ev("a", tokens=7), never_called)
    state, counted = assign_index(state, ev("b"), estimate_tokens)
    assert sequenced(given).tokens == 7
    assert sequenced(counted).tokens == estimate_tokens("hello world 你好") == 6


def test_event_is_otherwise_unchanged() -> None:
    original = ev("a", attrs={"path": "src/auth.ts"}, tool="editor", project_id="p1")
    _, result = assign_index(ThreadState.new("u1", "t1"), original, estimate_tokens)
    event = sequenced(result)
    assert event.to_dict() == {**original.to_dict(), "index": 0, "tokens": 6}


def test_project_id_is_taken_by_a_state_without_one() -> None:
    state = ThreadState.new("u1", "t1")
    state, _ = assign_index(state, ev("a", project_id="p1"), estimate_tokens)
    assert state.project_id == "p1"
    state, _ = assign_index(state, ev("b", project_id="p2"), estimate_tokens)
    assert state.project_id == "p1"


def test_other_thread_is_a_caller_bug() -> None:
    with pytest.raises(ValueError, match="u1/t2"):
        assign_index(ThreadState.new("u1", "t1"), ev("a", thread_id="t2"), estimate_tokens)


def test_step_feeds_and_session_end_closes_the_window() -> None:
    cfg = SegmenterConfig(max_events=40, max_tokens=6000, min_events=10)
    state = ThreadState.new("u1", "t1")
    state, _, ranges = step(state, ev("a"), cfg, estimate_tokens)
    assert ranges == [] and len(state.pending) == 1
    state, result, ranges = step(state, ev("b", kind="session_end"), cfg, estimate_tokens)
    assert sequenced(result).index == 1
    assert [(r.event_ids, r.reason) for r in ranges] == [(("a", "b"), "session_end")]
    assert state.pending == () and state.next_index == 2


def test_step_rejected_changes_nothing() -> None:
    cfg = SegmenterConfig()
    state = ThreadState.new("u1", "t1")
    state, _, _ = step(state, ev("a", 3), cfg, estimate_tokens)
    after, result, ranges = step(state, ev("b", 2), cfg, estimate_tokens)
    assert isinstance(result, Rejected) and result.field == "index"
    assert after == state and ranges == []

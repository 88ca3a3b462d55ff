"""Segmenter: properties over random event streams plus the hand-made cutting cases."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from breadcrumb.processors.segmenter import PendingEvent, SegmenterConfig, ThreadState, feed, flush
from breadcrumb.processors.sequencing import Sequenced, step
from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.topics.records import BOUNDARY_KINDS, ClosedRange, Event

KINDS = (
    "message",
    "tool_call",
    "tool_result",
    "file_edit",
    "test_result",
    "topic_change",
    "session_end",
    "note",
)
SHORT_OK = {"oversized", "max_tokens", "session_end", "idle", "flush"}


def ev(index: int | None, kind: str = "message", tokens: int | None = 10, n: int = 0) -> Event:
    """A tiny event of thread u1/t1 (ids from index, or n when index is None)."""
    key = index if index is not None else n
    return Event(
        event_id=f"e{key}",
        user_id="u1",
        thread_id="t1",
        ts=f"2024-05-01T00:00:{key % 60:02d}Z",
        role="assistant",
        kind=kind,
        content=f"event {key}",
        project_id="p1",
        index=index,
        tokens=tokens,
    )


def feed_all(
    events: Sequence[Event], cfg: SegmenterConfig, state: ThreadState | None = None
) -> tuple[ThreadState, list[ClosedRange]]:
    state = state or ThreadState.new("u1", "t1", "p1")
    out: list[ClosedRange] = []
    for event in events:
        state, ranges = feed(state, event, cfg)
        out.extend(ranges)
    return state, out


def spans(ranges: Sequence[ClosedRange]) -> list[tuple[int, int, str]]:
    return [(r.source_range.start_index, r.source_range.end_index, r.reason) for r in ranges]


# --- random streams ---------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One stream item: an event (gap, kind, tokens) or an idle flush marker."""

    gap: int
    kind: str
    tokens: int
    idle_flush: bool


# Mostly small events, some medium, one in twenty over any max_tokens drawn below.
tokens_st = st.tuples(st.integers(0, 19), st.integers(0, 150), st.integers(601, 900)).map(
    lambda t: t[2] if t[0] == 0 else t[1] if t[0] < 5 else t[1] // 4
)
kind_st = st.sampled_from(["message"] * 6 + list(KINDS[1:]) + ["topic_change"])
item_st = st.builds(
    Item,
    gap=st.sampled_from([0, 0, 0, 0, 1, 3]),
    kind=kind_st,
    tokens=tokens_st,
    idle_flush=st.sampled_from([False] * 19 + [True]),
)
cfg_st = st.builds(
    lambda max_events, min_frac, max_tokens: SegmenterConfig(
        max_events=max_events,
        max_tokens=max_tokens,
        min_events=max(1, int(max_events * min_frac)),
    ),
    st.integers(2, 12),
    st.floats(0.0, 1.0),
    st.integers(150, 600),
)


def run_stream(
    items: Sequence[Item], cfg: SegmenterConfig, roundtrip: bool = False
) -> tuple[list[Event], list[ClosedRange], list[ThreadState]]:
    """Sequence + segment a stream; optionally restore the state from JSON before each step."""
    state = ThreadState.new("u1", "t1", "p1")
    fed: list[Event] = []
    ranges: list[ClosedRange] = []
    states: list[ThreadState] = []
    index = 0
    for n, item in enumerate(items):
        if roundtrip:
            restored = ThreadState.from_dict(json.loads(json.dumps(state.to_dict())))
            assert restored == state
            state = restored
        if item.idle_flush:
            state, closed = flush(state, "idle")
        else:
            index += item.gap
            event = ev(index, item.kind, item.tokens, n)
            event = Event.from_dict({**event.to_dict(), "event_id": f"e{n}"})
            state, result, closed = step(state, event, cfg, estimate_tokens)
            assert isinstance(result, Sequenced)
            fed.append(result.event)
            index = result.event.index + 1 if result.event.index is not None else index
            if item.kind == "session_end":
                assert state.pending == ()
        ranges.extend(closed)
        states.append(state)
    state, closed = flush(state, "flush")
    ranges.extend(closed)
    assert state.pending == ()
    return fed, ranges, states


def check_invariants(fed: list[Event], ranges: list[ClosedRange], cfg: SegmenterConfig) -> None:
    by_id = {e.event_id: e for e in fed}
    # every event in exactly one range, ranges in stream (= index) order
    assert [i for r in ranges for i in r.event_ids] == [e.event_id for e in fed]
    for pos, r in enumerate(ranges):
        events = [by_id[i] for i in r.event_ids]
        assert r.source_range.start_index == events[0].index
        assert r.source_range.end_index == events[-1].index
        assert r.user_id == "u1" and r.project_id == "p1" and r.source_range.thread_id == "t1"
        assert len(events) <= cfg.max_events
        tokens = sum(e.tokens or 0 for e in events)
        nxt = ranges[pos + 1] if pos + 1 < len(ranges) else None
        if tokens > cfg.max_tokens:
            assert len(events) == 1 and r.reason == "oversized"
        if len(events) < cfg.min_events:
            assert r.reason in SHORT_OK, spans(ranges)
        if r.reason == "boundary":
            assert events[-1].kind in BOUNDARY_KINDS and len(events) >= cfg.min_events
        if r.reason == "topic_change":
            assert nxt is not None and by_id[nxt.event_ids[0]].kind == "topic_change"
            assert len(events) >= cfg.min_events
        if r.reason == "session_end":
            assert events[-1].kind == "session_end"
        if r.reason == "oversized" and tokens <= cfg.max_tokens:
            assert nxt is not None and nxt.reason == "oversized" and len(nxt.event_ids) == 1
        if r.reason == "max_tokens":
            assert nxt is not None
            assert tokens + (by_id[nxt.event_ids[0]].tokens or 0) > cfg.max_tokens
        if r.reason == "max_events":
            assert len(events) == cfg.max_events
        for p, e in enumerate(events):  # a topic change joins a window only while it is short
            if e.kind == "topic_change" and p > 0:
                assert p < cfg.min_events, spans(ranges)
    for a, b in zip(ranges, ranges[1:], strict=False):
        assert a.source_range.end_index < b.source_range.start_index


@settings(max_examples=300, deadline=None)
@given(st.lists(item_st, max_size=80), cfg_st)
def test_random_streams_keep_the_invariants(items: list[Item], cfg: SegmenterConfig) -> None:
    fed, ranges, _ = run_stream(items, cfg)
    check_invariants(fed, ranges, cfg)


@settings(max_examples=150, deadline=None)
@given(st.lists(item_st, max_size=60), cfg_st)
def test_deterministic_and_restartable(items: list[Item], cfg: SegmenterConfig) -> None:
    first = run_stream(items, cfg)
    second = run_stream(items, cfg)
    restarted = run_stream(items, cfg, roundtrip=True)
    assert first == second
    assert first == restarted


@settings(max_examples=100, deadline=None)
@given(st.lists(item_st, max_size=60), cfg_st)
def test_state_is_small_json(items: list[Item], cfg: SegmenterConfig) -> None:
    _, _, states = run_stream(items, cfg)
    for state in states:
        text = json.dumps(state.to_dict())
        assert "event " not in text  # no content, ids and counts only
        assert len(state.pending) < cfg.max_events
        assert state.pending_tokens <= cfg.max_tokens


# --- hand-made cases ----------------------------------------------------------------


def test_full_window_cuts_right_after_the_last_boundary_marker() -> None:
    cfg = SegmenterConfig(max_events=10, max_tokens=10_000, min_events=3)
    kinds = ["message"] * 10
    kinds[2] = "tool_result"  # an earlier marker: the cut prefers the last one
    kinds[6] = "file_edit"
    events = [ev(i, k) for i, k in enumerate(kinds)]
    state, ranges = feed_all(events, cfg)
    assert spans(ranges) == [(0, 6, "boundary")]
    assert [p.index for p in state.pending] == [7, 8, 9]


def test_boundary_that_leaves_too_few_events_is_not_used() -> None:
    cfg = SegmenterConfig(max_events=10, max_tokens=10_000, min_events=5)
    kinds = ["message"] * 10
    kinds[2] = "test_result"  # head would hold 3 < 5 events
    _, ranges = feed_all([ev(i, k) for i, k in enumerate(kinds)], cfg)
    assert spans(ranges) == [(0, 9, "max_events")]


def test_token_budget_cuts_after_a_boundary_when_that_makes_room() -> None:
    cfg = SegmenterConfig(max_events=40, max_tokens=1000, min_events=3)
    kinds = ["message"] * 11
    kinds[5] = "tool_result"
    state, ranges = feed_all([ev(i, k, tokens=100) for i, k in enumerate(kinds)], cfg)
    assert spans(ranges) == [(0, 5, "boundary")]
    assert [p.index for p in state.pending] == [6, 7, 8, 9, 10]


def test_token_budget_closes_whole_window_when_no_boundary_helps() -> None:
    cfg = SegmenterConfig(max_events=40, max_tokens=1000, min_events=3)
    kinds = ["message"] * 5 + ["tool_result"] + ["message"] * 3
    events = [ev(i, k, tokens=100) for i, k in enumerate(kinds)]
    events.append(ev(9, "message", tokens=750))  # tail after the marker (300) + 750 > 1000
    state, ranges = feed_all(events, cfg)
    assert spans(ranges) == [(0, 8, "max_tokens")]
    assert [p.index for p in state.pending] == [9]


def test_topic_change_starts_a_new_range() -> None:
    cfg = SegmenterConfig(max_events=40, max_tokens=10_000, min_events=3)
    events = [ev(i) for i in range(3)] + [ev(3, "topic_change"), ev(4)]
    state, ranges = feed_all(events, cfg)
    assert spans(ranges) == [(0, 2, "topic_change")]
    assert [p.index for p in state.pending] == [3, 4]


def test_early_topic_change_joins_the_window() -> None:
    cfg = SegmenterConfig(max_events=40, max_tokens=10_000, min_events=3)
    state, ranges = feed_all([ev(0), ev(1, "topic_change"), ev(2)], cfg)
    assert ranges == []
    assert [p.index for p in state.pending] == [0, 1, 2]


def test_oversized_event_gets_a_range_of_its_own() -> None:
    cfg = SegmenterConfig(max_events=40, max_tokens=100, min_events=3)
    events = [ev(0), ev(1), ev(2, tokens=500), ev(3)]
    state, ranges = feed_all(events, cfg)
    assert spans(ranges) == [(0, 1, "oversized"), (2, 2, "oversized")]
    assert ranges[1].event_ids == ("e2",)
    assert [p.index for p in state.pending] == [3]


def test_session_end_is_included_and_flushes_at_once() -> None:
    cfg = SegmenterConfig(max_events=40, max_tokens=10_000, min_events=10)
    state, ranges = feed_all([ev(0), ev(1), ev(2, "session_end")], cfg)
    assert spans(ranges) == [(0, 2, "session_end")]
    assert ranges[0].event_ids == ("e0", "e1", "e2")
    assert state.pending == ()


def test_flush_of_empty_window_closes_nothing() -> None:
    state = ThreadState.new("u1", "t1")
    assert flush(state, "idle") == (state, [])


def test_flush_of_short_tail_is_allowed_and_keeps_reason() -> None:
    cfg = SegmenterConfig(max_events=40, max_tokens=10_000, min_events=10)
    state, _ = feed_all([ev(3), ev(7)], cfg)
    state, ranges = flush(state, "idle")
    assert spans(ranges) == [(3, 7, "idle")]
    assert ranges[0].event_ids == ("e3", "e7")
    assert state.pending == () and state.last_ts == ev(7).ts


def test_explicit_index_gaps_stay_inside_one_range() -> None:
    cfg = SegmenterConfig(max_events=3, max_tokens=10_000, min_events=1)
    _, ranges = feed_all([ev(0), ev(5), ev(9), ev(10)], cfg)
    assert spans(ranges) == [(0, 9, "max_events")]


def test_state_round_trips_through_json() -> None:
    state = ThreadState("u1", "t1", "p1", 12, (PendingEvent(10, "e10", 5, "note", "ts"),), "ts")
    data = json.loads(json.dumps(state.to_dict()))
    assert ThreadState.from_dict(data) == state
    assert set(data) == {"user_id", "thread_id", "project_id", "next_index", "pending", "last_ts"}


def test_feed_rejects_caller_bugs() -> None:
    cfg = SegmenterConfig()
    state, _ = feed_all([ev(4)], cfg)
    with pytest.raises(ValueError, match="does not follow"):
        feed(state, ev(4), cfg)
    with pytest.raises(ValueError, match="index and tokens"):
        feed(state, ev(None, n=9), cfg)
    with pytest.raises(ValueError, match="u1/t2"):
        feed(state, Event.from_dict({**ev(9).to_dict(), "thread_id": "t2"}), cfg)


def test_config_is_validated() -> None:
    with pytest.raises(ValueError):
        SegmenterConfig(max_events=5, min_events=6)
    with pytest.raises(ValueError):
        SegmenterConfig(max_tokens=0)

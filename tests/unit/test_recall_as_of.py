"""Memories as they stood at a time (query_api.recall.as_of), on an in-memory store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from breadcrumb.query_api.recall.as_of import (
    MemoriesAsOf,
    effective_as_of,
    events_as_of,
    evidence_as_of,
)
from breadcrumb.topics.records import Event, Observation, SourceRange


def _memory(mid: str, day: int, status: str = "active", **meta: Any) -> Observation:
    return Observation(mid, "u1", None, f"memory {mid}", SourceRange(mid, 0, 1), (), (), "",
                       0.5, f"2026-03-{day:02d}T10:00:00Z", status=status, metadata=meta)


class RowStore:
    """get_memories + get_memory_rows (superseded_by), as the SQL stores answer them."""

    def __init__(self, memories: list[Observation], superseded_by: dict[str, str]) -> None:
        self.memories = {m.id: m for m in memories}
        self.superseded_by = superseded_by

    def get_memories(self, user_id: str, ids: Sequence[str]) -> list[Observation]:
        return [self.memories[i] for i in ids if i in self.memories]

    def get_memory_rows(self, user_id: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {i: {"superseded_by": self.superseded_by.get(i)} for i in ids
                if i in self.memories}


def _at(day: int) -> datetime:
    return datetime(2026, 3, day, tzinfo=UTC)


def _chain() -> tuple[RowStore, list[Observation]]:
    """DB_PORT 5432 (a, Mar 2) -> 6432 (b, Mar 9) -> 7432 (c, Mar 16), as stored now."""
    a = _memory("a", 2, "superseded", superseded_facts={
        "DB_PORT": {"value": "5432", "new_value": "6432", "superseded_by": "b"}})
    b = _memory("b", 9, "superseded", superseded_facts={
        "DB_PORT": {"value": "6432", "new_value": "7432", "superseded_by": "c"}})
    c = _memory("c", 16)
    return RowStore([a, b, c], {"a": "b", "b": "c"}), [a, b, c]


def _then(store: RowStore, memories: list[Observation], day: int) -> dict[str, Observation]:
    view = MemoriesAsOf(store, "u1", _at(day))  # type: ignore[arg-type]
    return {m.id: m for m in view(memories)}


def test_between_two_changes_the_middle_value_is_current() -> None:
    store, memories = _chain()
    then = _then(store, memories, 12)
    assert set(then) == {"a", "b"}  # c was said on the 16th
    assert then["a"].status == "superseded"
    assert then["b"].status == "active"
    assert "superseded_facts" not in then["b"].metadata  # its value was not replaced yet
    assert then["a"].metadata["superseded_facts"]["DB_PORT"]["superseded_by"] == "b"


def test_before_the_first_change_only_the_first_value_exists() -> None:
    store, memories = _chain()
    then = _then(store, memories, 5)
    assert list(then) == ["a"] and then["a"].status == "active"
    assert "superseded_facts" not in then["a"].metadata


def test_after_every_change_memories_are_as_stored() -> None:
    store, memories = _chain()
    then = _then(store, memories, 20)
    assert [then[m.id] for m in memories] == memories


def test_a_fact_superseded_later_is_current_then_even_without_a_row_link() -> None:
    a = _memory("a", 2, "active", superseded_facts={  # one of its facts replaced, not all
        "PORT": {"value": "1", "new_value": "2", "superseded_by": "b"},
        "HOST": {"value": "x", "new_value": "y", "superseded_by": "c"}})
    store = RowStore([a, _memory("b", 9), _memory("c", 16)], {})
    then = _then(store, [a], 12)["a"]
    assert then.status == "active"
    assert set(then.metadata["superseded_facts"]) == {"PORT"}


def test_a_forgotten_superseder_leaves_the_memory_as_it_is() -> None:
    a = _memory("a", 2, "superseded")
    store = RowStore([a], {"a": "gone"})
    assert _then(store, [a], 12)["a"].status == "superseded"


def test_an_unreadable_creation_time_is_never_shown() -> None:
    odd = replace(_memory("a", 2), created_at="sometime")
    assert _then(RowStore([odd], {}), [odd], 12) == {}


def test_a_time_not_before_the_request_filters_nothing() -> None:
    asked = _at(12)
    assert effective_as_of(None, asked) is None
    assert effective_as_of(_at(13), asked) is None
    assert effective_as_of(asked, asked) is None
    assert effective_as_of(_at(11), asked) == _at(11)
    naive = _at(11).replace(tzinfo=None)
    assert effective_as_of(naive, asked) == _at(11)  # naive: UTC


def test_events_and_evidence_said_later_are_cut() -> None:
    events = [Event("e1", "u1", "t", "2026-03-11T23:59:59Z", "user", "message", "x", index=0),
              Event("e2", "u1", "t", "2026-03-12T00:00:01+00:00", "user", "message", "y",
                    index=1)]
    assert [e.event_id for e in events_as_of(events, _at(12))] == ["e1"]
    assert events_as_of(events, None) == events
    items = [{"matched_event_ids": ["e1"], "event_ts": {"e1": events[0].ts}},
             {"matched_event_ids": ["e1", "e2"], "event_ts": {"e1": events[0].ts,
                                                             "e2": events[1].ts}},
             {"matched_event_ids": ["e3"], "event_ts": {}}]  # undated: cannot be placed
    assert evidence_as_of(items, _at(12)) == items[:1]

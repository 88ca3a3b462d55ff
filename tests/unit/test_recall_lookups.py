"""Batched lookups on the recall path give what one lookup per id gives."""

from __future__ import annotations

from breadcrumb.query_api.recall.raw_reads import events_by_id
from breadcrumb.topics.records import Event


def _ev(eid: str, user: str = "u") -> Event:
    return Event(eid, user, "t", "2024-01-01T00:00:00Z", "user", "message", eid, index=0)


class OneByOne:
    """A RawEventStore with only ``get_event`` (counts the calls)."""

    def __init__(self, events: list[Event]) -> None:
        self.events = {(e.user_id, e.event_id): e for e in events}
        self.calls = 0

    def get_event(self, user_id: str, event_id: str) -> Event | None:
        self.calls += 1
        return self.events.get((user_id, event_id))


class HotOnlyBatch(OneByOne):
    """``get_events`` sees only the hot events (an archive's forwarded batch lookup);
    ``get_event`` also finds the cold ones."""

    def __init__(self, hot: list[Event], cold: list[Event]) -> None:
        super().__init__(hot + cold)
        self.hot = {e.event_id for e in hot}
        self.batches = 0

    def get_events(self, user_id: str, event_ids: list[str]) -> dict[str, Event]:
        self.batches += 1
        return {i: self.events[(user_id, i)] for i in event_ids
                if i in self.hot and (user_id, i) in self.events}


def test_one_lookup_per_id_without_a_batch_lookup() -> None:
    store = OneByOne([_ev("a"), _ev("b"), _ev("x", user="other")])
    found = events_by_id(store, "u", ["b", "a", "b", "missing", "x"])
    assert list(found) == ["b", "a"]  # other users' events never come back
    assert store.calls == 4  # each distinct id once


def test_batch_lookup_then_the_ids_it_missed() -> None:
    store = HotOnlyBatch([_ev("a"), _ev("b")], [_ev("cold")])
    found = events_by_id(store, "u", ["a", "cold", "b", "gone"])
    assert set(found) == {"a", "b", "cold"} and found["cold"].event_id == "cold"
    assert store.batches == 1 and store.calls == 2  # only "cold" and "gone" one by one
    assert events_by_id(store, "u", []) == {} and store.batches == 1

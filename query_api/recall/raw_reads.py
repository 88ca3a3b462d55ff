"""Raw event reads every stage after Retrieve shares: a followed range's events, read once
per recall (:class:`RangeReader`, handed from Recall to Extract), and events by id
(:func:`events_by_id`: Extract's lines, Respond's timestamps).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

from breadcrumb.query_api.recall.as_of import events_as_of
from breadcrumb.stores.ports import BatchedEventReads, RawEventStore
from breadcrumb.topics.records import Event, Observation


class RangeReader:
    """Recall level 2: the raw events of followed ranges, each range read once, when
    Extract finds that the chunk lines do not answer. Its reading time is Recall's."""

    __slots__ = ("raw", "user_id", "as_of", "seconds", "_read")

    def __init__(self, raw: RawEventStore, user_id: str, as_of: datetime | None = None) -> None:
        self.raw, self.user_id, self.as_of = raw, user_id, as_of
        self.seconds = 0.0
        self._read: dict[tuple[str, int, int], list[Event]] = {}

    def events(self, memory: Observation) -> list[Event]:
        """The events of ``memory``'s source range."""
        rng = memory.source_range
        key = (rng.thread_id, rng.start_index, rng.end_index)
        if key not in self._read:
            started = time.perf_counter()
            events = self.raw.get_range(self.user_id, *key)
            self._read[key] = events if self.as_of is None else events_as_of(events, self.as_of)
            self.seconds += time.perf_counter() - started
        return self._read[key]


def events_by_id(raw: RawEventStore, user_id: str, event_ids: Sequence[str]) -> dict[str, Event]:
    """The user's events among ``event_ids``: one statement where the store has a batch
    lookup (:class:`BatchedEventReads`), then ``get_event`` for the ids it did not find (an
    archive answers those from its cold objects), so the result is that of one lookup
    per id."""
    ids = list(dict.fromkeys(event_ids))
    found: dict[str, Event] = (dict(raw.get_events(user_id, ids))
                               if isinstance(raw, BatchedEventReads) and ids else {})
    for eid in ids:
        if eid not in found and (event := raw.get_event(user_id, eid)) is not None:
            found[eid] = event
    return found

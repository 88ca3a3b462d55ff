"""Issue 14: the raw-event reads and writes of a derivation batch in a few statements.

A batch first looks up all its event ids at once (:meth:`BatchedRawEvents.prefetch`, one
``SELECT ... IN`` per user), then buffers the new events and writes them with one
``executemany`` at the end of the batch, inside the batch's transaction. A closing range
whose every index is held here (looked up or new in this batch) is answered from memory:
``(user_id, thread_id, index)`` is unique, so SQL would return exactly those events. Any
other range flushes the buffer and reads SQL. The other calls of the port (counts, many
at once, the full scan) are the store's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from breadcrumb.stores.ports.tables import RawEvents
from breadcrumb.topics.records import Event


class BatchedRawEvents:
    """The raw events of a SQL store for the length of one batch (``RawEvents``)."""

    def __init__(self, store: RawEvents) -> None:
        self.store = store
        self._known: dict[tuple[str, str], Event | None] = {}
        self._pending: list[Event] = []
        self._by_index: dict[tuple[str, str], dict[int, Event]] = {}  # held here, by index
        self.range_reads = 0  # ranges read back from SQL (the rest were answered here)

    def _hold(self, event: Event) -> None:
        if event.index is not None:
            self._by_index.setdefault((event.user_id, event.thread_id), {})[event.index] = event

    def prefetch(self, ids: Iterable[tuple[str, str]]) -> None:
        """Look up ``(user_id, event_id)`` pairs at once (missing ones are remembered)."""
        by_user: dict[str, list[str]] = {}
        for user_id, event_id in ids:
            if (user_id, event_id) not in self._known:
                by_user.setdefault(user_id, []).append(event_id)
        for user_id, event_ids in by_user.items():
            for start in range(0, len(event_ids), 500):
                part = event_ids[start:start + 500]
                found = self.store.get_events(user_id, part)
                for event_id in part:
                    event = found.get(event_id)
                    self._known[(user_id, event_id)] = event
                    if event is not None:
                        self._hold(event)

    def get_event(self, user_id: str, event_id: str) -> Event | None:
        key = (user_id, event_id)
        if key in self._known:
            return self._known[key]
        return self.store.get_event(user_id, event_id)

    def put_event(self, event: Event) -> bool:
        key = (event.user_id, event.event_id)
        if self._known.get(key) is not None:
            return False
        self._known[key] = event
        self._pending.append(event)
        self._hold(event)
        return True

    def get_range(self, user_id: str, thread_id: str, start: int, end: int) -> list[Event]:
        held = self._by_index.get((user_id, thread_id), {})
        if end >= start and all(i in held for i in range(start, end + 1)):
            return [held[i] for i in range(start, end + 1)]
        self.range_reads += 1
        self.flush()
        return list(self.store.get_range(user_id, thread_id, start, end))

    def flush(self) -> None:
        """Write the buffered events (call inside the batch's transaction)."""
        pending, self._pending = self._pending, []
        self.store.put_events(pending)

    # --- the rest of the port: the store's own --------------------------------------------
    def get_events(self, user_id: str, event_ids: Sequence[str]) -> dict[str, Event]:
        return self.store.get_events(user_id, event_ids)

    def put_events(self, events: Sequence[Event]) -> None:
        self.store.put_events(events)

    def count_events(self) -> int:
        return self.store.count_events()

    def iter_all_events(self, after: tuple[str, str, int] | None = None,
                        batch: int = 500) -> Iterator[Event]:
        return self.store.iter_all_events(after, batch)

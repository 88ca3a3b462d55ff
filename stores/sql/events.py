"""The raw events of a SQL store (RawEventStore): one row per indexed event, read by
id, by thread range, or all in keyset pages."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import IndexConflictError, Row, SqlDatabase
from breadcrumb.topics.records import Event


class SqlEvents:
    """The ``raw_events`` table: ``RawEventStore`` and ``BatchedEventReads``
    (:mod:`stores.ports`), plus the batch insert and the full scan a replay reads."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    def put_event(self, event: Event) -> bool:
        """Store an indexed event; False (and no change) when its event_id already exists.

        Raises :class:`IndexConflictError` when another event holds the same index.
        """
        if event.index is None:
            raise ValueError(f"event {event.event_id!r} has no index")
        with self.db.transaction():
            if self.db.insert_unique(s.INSERT_EVENT, s.event_to_row(event)):
                return True
            if self.db.fetch("SELECT 1 FROM raw_events WHERE user_id = ? AND event_id = ?",
                           (event.user_id, event.event_id)):
                return False
        raise IndexConflictError(
            f"user {event.user_id!r} thread {event.thread_id!r} index {event.index} is held "
            f"by another event (rejected {event.event_id!r})")

    def get_event(self, user_id: str, event_id: str) -> Event | None:
        """The event with this id, of this user only."""
        rows = self.db.read(f"{s.SELECT_EVENTS} WHERE user_id = ? AND event_id = ?",
                          (user_id, event_id))
        return s.event_from_row(rows[0]) if rows else None

    def get_events(self, user_id: str, event_ids: Sequence[str]) -> dict[str, Event]:
        """Issue 14: the stored events of ``user_id`` among ``event_ids`` (one statement)."""
        ids = list(dict.fromkeys(event_ids))
        if not ids:
            return {}
        rows = self.db.read(f"{s.SELECT_EVENTS} WHERE user_id = ? AND event_id IN "
                          f"({s.marks(len(ids))})", (user_id, *ids))
        return {e.event_id: e for e in map(s.event_from_row, rows)}

    def put_events(self, events: Sequence[Event]) -> None:
        """Issue 14: insert new indexed events in one statement (a batch that already
        checked they are new; a duplicate raises and the caller's transaction rolls back)."""
        if events:
            with self.db.transaction():
                self.db.execute_many(s.INSERT_EVENT, [s.event_to_row(e) for e in events])

    def get_range(self, user_id: str, thread_id: str, start: int, end: int) -> list[Event]:
        """Events with start <= index <= end, in index order."""
        rows = self.db.read(
            f"{s.SELECT_EVENTS} WHERE user_id = ? AND thread_id = ? AND idx >= ? AND idx <= ?"
            " ORDER BY idx", (user_id, thread_id, start, end))
        return [s.event_from_row(r) for r in rows]

    def count_events(self) -> int:
        """All stored events, every user."""
        return self.db.scalar("SELECT COUNT(*) FROM raw_events")

    def iter_all_events(self, after: tuple[str, str, int] | None = None,
                        batch: int = 500) -> Iterator[Event]:
        """Every event ordered by (user_id, thread_id, index), strictly after ``after``.

        Reads in keyset pages of ``batch`` rows; resume by passing the last
        ``(user_id, thread_id, index)`` seen.
        """
        cursor = after
        while True:
            rows = self._events_after(cursor, batch)
            yield from (s.event_from_row(r) for r in rows)
            if len(rows) < batch:
                return
            cursor = (rows[-1][0], rows[-1][1], int(rows[-1][2]))

    def _events_after(self, after: tuple[str, str, int] | None, batch: int) -> list[Row]:
        order = " ORDER BY user_id, thread_id, idx LIMIT ?"
        if after is None:
            return self.db.read(s.SELECT_EVENTS + order, (batch,))
        u, t, i = after
        where = " WHERE user_id > ? OR (user_id = ? AND (thread_id > ? OR " \
                "(thread_id = ? AND idx > ?)))"
        return self.db.read(s.SELECT_EVENTS + where + order, (u, u, t, t, i, batch))

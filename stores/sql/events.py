"""The raw events of a SQL store (RawEventStore): one row per indexed event, read by
id, by thread range, or all in keyset pages."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from breadcrumb.stores.sql import log_text
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import IndexConflictError, Row, SqlDatabase
from breadcrumb.topics.records import Event


class SqlEvents:
    """The ``raw_events`` table: ``RawEventStore`` and ``BatchedEventReads``
    (:mod:`stores.ports`), plus the batch insert and the full scan a replay reads."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        # issue 49: SQLite rows are views into the log where it holds the event's content
        self.views = not db.dialect.mysql
        self.select = log_text.select_events(db.dialect)

    def _rows(self, events: Sequence[Event]) -> tuple[str, list[tuple[Any, ...]]]:
        """The INSERT statement and its rows for ``events`` (views where they can be)."""
        if self.views:
            return log_text.INSERT_EVENT_VIEW, log_text.stored_rows(self.db, events)
        return s.INSERT_EVENT, [s.event_to_row(e) for e in events]

    def _decode(self, rows: Sequence[Row]) -> list[Event]:
        return [s.event_from_row(r) for r in log_text.present(rows)]

    def put_event(self, event: Event) -> bool:
        """Store an indexed event; False (and no change) when its event_id already exists.

        Raises :class:`IndexConflictError` when another event holds the same index.
        """
        if event.index is None:
            raise ValueError(f"event {event.event_id!r} has no index")
        with self.db.transaction():
            sql, rows = self._rows([event])
            if self.db.insert_unique(sql, rows[0]):
                return True
            if self.db.fetch("SELECT 1 FROM raw_events WHERE user_id = ? AND event_id = ?",
                           (event.user_id, event.event_id)):
                return False
        raise IndexConflictError(
            f"user {event.user_id!r} thread {event.thread_id!r} index {event.index} is held "
            f"by another event (rejected {event.event_id!r})")

    def get_event(self, user_id: str, event_id: str) -> Event | None:
        """The event with this id, of this user only."""
        found = self._decode(self.db.read(f"{self.select} WHERE user_id = ? AND event_id = ?",
                                          (user_id, event_id)))
        return found[0] if found else None

    def get_events(self, user_id: str, event_ids: Sequence[str]) -> dict[str, Event]:
        """Issue 14: the stored events of ``user_id`` among ``event_ids`` (one statement)."""
        ids = list(dict.fromkeys(event_ids))
        if not ids:
            return {}
        rows = self.db.read(f"{self.select} WHERE user_id = ? AND event_id IN "
                          f"({s.marks(len(ids))})", (user_id, *ids))
        return {e.event_id: e for e in self._decode(rows)}

    def put_events(self, events: Sequence[Event]) -> None:
        """Issue 14: insert new indexed events in one statement (a batch that already
        checked they are new; a duplicate raises and the caller's transaction rolls back)."""
        if events:
            with self.db.transaction():
                self.db.execute_many(*self._rows(events))

    def get_range(self, user_id: str, thread_id: str, start: int, end: int) -> list[Event]:
        """Events with start <= index <= end, in index order."""
        rows = self.db.read(
            f"{self.select} WHERE user_id = ? AND thread_id = ? AND idx >= ? AND idx <= ?"
            " ORDER BY idx", (user_id, thread_id, start, end))
        return self._decode(rows)

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
            yield from self._decode(rows)
            if len(rows) < batch:
                return
            cursor = (rows[-1][0], rows[-1][1], int(rows[-1][2]))

    def _events_after(self, after: tuple[str, str, int] | None, batch: int) -> list[Row]:
        order = " ORDER BY user_id, thread_id, idx LIMIT ?"
        if after is None:
            return self.db.read(self.select + order, (batch,))
        u, t, i = after
        where = " WHERE user_id > ? OR (user_id = ? AND (thread_id > ? OR " \
                "(thread_id = ? AND idx > ?)))"
        return self.db.read(self.select + where + order, (u, u, t, t, i, batch))

"""The ``archived_ranges`` table: source ranges whose events live in cold storage, and
the hot rows dropped once they are archived.

The ``archived`` of :class:`~stores.sql.lifecycle.LifecycleTables`.
"""

from __future__ import annotations

from typing import Any

from breadcrumb.stores.sql import chunk_text
from breadcrumb.stores.sql.core import SqlDatabase


class SqlArchivedRanges:
    """Archived ranges of raw events, and the hot rows they replace (``ArchivedRanges``,
    :mod:`stores.ports.tables`)."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    def add_archived(self, user_id: str, thread_id: str, start: int, end: int, key: str) -> None:
        """Record that a range's events live in cold storage under ``key``."""
        sql = self.db.dialect.upsert("archived_ranges", (
            "user_id", "thread_id", "start_idx", "end_idx", "object_key"),
            ("user_id", "thread_id", "start_idx"), ("end_idx", "object_key"))
        with self.db.transaction():
            self.db.execute(sql, (user_id, thread_id, start, end, key))

    def remove_archived(self, user_id: str, thread_id: str, start: int) -> None:
        """Forget an archived range (after a restore)."""
        with self.db.transaction():
            self.db.execute("DELETE FROM archived_ranges WHERE user_id = ? AND thread_id = ? "
                                "AND start_idx = ?", (user_id, thread_id, start))

    def has_archived(self, user_id: str) -> bool:
        """Whether any range of the user lives in cold storage."""
        return bool(self.db.read("SELECT 1 FROM archived_ranges WHERE user_id = ? LIMIT 1",
                                     (user_id,)))

    def archived_overlapping(self, user_id: str, thread_id: str | None, start: int,
                             end: int) -> list[tuple[str, int, int, str]]:
        """(thread_id, start, end, key) of archived ranges overlapping [start, end]
        (every thread of the user when ``thread_id`` is None)."""
        sql = ("SELECT thread_id, start_idx, end_idx, object_key FROM archived_ranges "
               "WHERE user_id = ? AND start_idx <= ? AND end_idx >= ?")
        params: tuple[Any, ...] = (user_id, end, start)
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params += (thread_id,)
        rows = self.db.read(sql + " ORDER BY thread_id, start_idx", params)
        return [(str(t), int(a), int(b), str(k)) for t, a, b, k in rows]

    def delete_raw_range(self, user_id: str, thread_id: str, start: int, end: int) -> int:
        """Drop hot raw events of a range (they were archived). A chunk row of another
        memory that is a view into one of them gets its text first (issue 49: the memory's
        own chunks are deleted before, ``delete_chunks``)."""
        with self.db.transaction():
            chunk_text.materialize(self.db, user_id, thread_id, start, end)
            return int(self.db.execute(
                "DELETE FROM raw_events WHERE user_id = ? AND thread_id = ? AND idx >= ? "
                "AND idx <= ?", (user_id, thread_id, start, end)))

    def delete_chunks(self, user_id: str, memory_id: str) -> int:
        """Drop a memory's hot chunk rows (they were archived)."""
        with self.db.transaction():
            return int(self.db.execute(
                "DELETE FROM source_chunks WHERE user_id = ? AND memory_id = ?",
                (user_id, memory_id)))

"""The embedded default store: one SQLite file (:mod:`stores.sql.sqlite.database`).

Its table objects are those of :class:`~stores.sql.base.SqlStore`, some keeping rows in
memory between statements (one process owns a data dir): thread states
(:mod:`stores.sql.sqlite.states`), inserted events (:mod:`stores.sql.sqlite.events`), and
the memories, chunk rows and events recall read since the last write
(:mod:`stores.sql.sqlite.memories`). The store adds what only a file-backed store has:
counters many at once, the write / read / integrity probes and ``forget_cached``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from breadcrumb.stores.sql.base import SqlStore
from breadcrumb.stores.sql.counters import SqlCounters
from breadcrumb.stores.sql.schema import without_rowid
from breadcrumb.stores.sql.sqlite.database import SqliteDatabase
from breadcrumb.stores.sql.sqlite.events import HeldEvents, SqliteEvents
from breadcrumb.stores.sql.sqlite.memories import KeptRows, SqliteChunks, SqliteMemories
from breadcrumb.stores.sql.sqlite.states import SqliteThreadStates


class SqliteCounters(SqlCounters):
    """Counters, many set or dropped in one statement (``BatchedCounters``: the fair
    runner's per-thread marks)."""

    def set_counters(self, values: Sequence[tuple[str, int]]) -> None:
        """:meth:`set_counter` for many names, in this order, in one statement."""
        if values:
            sql = self.db.dialect.upsert("kv_counters", ("name", "value"), ("name",),
                                         ("value",))
            with self.db.transaction():
                self.db.execute_many(sql, values)

    def drop_counters(self, names: Sequence[str]) -> None:
        """Remove named counters (absent names are ignored), in one statement."""
        if names:
            with self.db.transaction():
                self.db.execute_many("DELETE FROM kv_counters WHERE name = ?",
                                     [(name,) for name in names])


class SqliteStore(SqlStore):
    """The table objects of one SQLite database file at ``path``."""

    db: SqliteDatabase

    def __init__(self, path: Path, busy_timeout_s: float = 30.0) -> None:
        db = SqliteDatabase(path, busy_timeout_s)
        kept = KeptRows(db)  # memories, chunks and events read since the last write
        held = HeldEvents()  # raw events inserted, for the range reads
        states = SqliteThreadStates(db)  # thread states between batches
        db.listen(kept, states, held)  # in this order: as the store's commit ran them
        super().__init__(db, SqliteEvents(db, held, kept),
                         SqliteMemories(db, SqliteChunks(db, kept), kept), states,
                         SqliteCounters(db))
        self.path = db.path

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    def drop_tables(self) -> None:
        with self.db.lock:
            super().drop_tables()
            self.db.reset()

    def forget_cached(self) -> None:
        """Drop every kept memory, chunk, event range and thread state (after an erasure,
        ``POST /v1/forget``: nothing forgotten is answered from memory); ports.ForgetsCached."""
        self.db.reset()

    # --- readiness probes ---------------------------------------------------------------

    def probe_write(self) -> None:
        """Take the write lock, write a row, roll back: raises when the file cannot be
        written (read-only, I/O error, corrupt pages on the path of the write)."""

        class _Rollback(Exception):
            pass

        try:
            with self.db.transaction():
                self.db.execute("INSERT OR REPLACE INTO kv_counters (name, value) "
                                "VALUES (?, ?)", ("__readyz_probe__", 0))
                raise _Rollback
        except _Rollback:
            pass

    def probe_read(self) -> None:
        """Read the schema and the first and last row of every table (their b-tree roots
        and edges): raises on pages that do not parse."""
        tables = [(str(r[0]), str(r[1])) for r in self.db.read(
            "SELECT name, sql FROM sqlite_schema WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%'")]
        for name, sql in tables:
            order = "rowid DESC"
            if without_rowid(sql):  # its key orders it
                key = sorted((int(r[5]), str(r[1])) for r in
                             self.db.read(f'PRAGMA table_info("{name}")') if int(r[5]))
                order = ", ".join(f'"{col}" DESC' for _, col in key)
            self.db.read(f'SELECT * FROM "{name}" LIMIT 1')
            self.db.read(f'SELECT * FROM "{name}" ORDER BY {order} LIMIT 1')

    def quick_check(self) -> str:
        """``PRAGMA quick_check`` on a separate read-only connection (readers do not block
        the writer under WAL): ``"ok"`` or the first problem found."""
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=self.db.busy_timeout_s)
        try:
            rows = conn.execute("PRAGMA quick_check(5)").fetchall()
        finally:
            conn.close()
        return "ok" if rows == [("ok",)] else "; ".join(str(r[0]) for r in rows)

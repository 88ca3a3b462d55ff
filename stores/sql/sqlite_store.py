"""The embedded default store: one SQLite file.

WAL journal (readers in other processes do not block the writer) and ``synchronous=FULL``
so a committed transaction -- e.g. an accepted event in the log -- survives a power cut
before the HTTP 202 goes out. One write connection shared across threads
(``check_same_thread=False``), serialised by the base class's re-entrant lock; transactions
start with ``BEGIN IMMEDIATE`` so the write lock is taken up front. Reads by threads that
do not hold that lock go to a few read-only connections and see the committed state
without waiting for the writer (``stores.sql.sqlite_readers``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from breadcrumb.stores.sql.base import SqlStore
from breadcrumb.stores.sql.schema import SQLITE
from breadcrumb.stores.sql.sqlite_events import CachedRangesMixin
from breadcrumb.stores.sql.sqlite_memories import CachedMemoriesMixin
from breadcrumb.stores.sql.sqlite_readers import ReadPoolMixin
from breadcrumb.stores.sql.sqlite_states import CachedStatesMixin

_DUPLICATE_CODES = frozenset({
    2067,  # SQLITE_CONSTRAINT_UNIQUE
    1555,  # SQLITE_CONSTRAINT_PRIMARYKEY
})


#: SQLite's page cache of each connection (anonymous memory, at most): small, because the
#: file is also mapped (``MMAP_BYTES``): a read of a page already in the OS's cache costs no
#: copy and no system call, and the mapped pages are the kernel's (shared by the readers,
#: given back under memory pressure). Each of the four connections had a 64 MB cache of its
#: own: anonymous memory grew with the file up to 256 MB (the soak's RSS).
PAGE_CACHE_KB = 4096
WRITER_CACHE_KB = 16384  # the write connection also holds a transaction's dirty pages
MMAP_BYTES = 1 << 30  # address space, not memory


class SqliteStore(CachedStatesMixin, CachedRangesMixin, CachedMemoriesMixin, ReadPoolMixin,
                  SqlStore):
    """All SQL-backed ports on one SQLite database file at ``path``.

    Why so many methods: it is the SQLite dialect of SqlStore (connect, begin / commit /
    rollback hooks that keep its mixins' row caches in step with the transaction) plus
    the capabilities only a file-backed store has: counters many at once, the write /
    read / integrity probes and forget_cached.
    """

    dialect = SQLITE
    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(self, path: Path, busy_timeout_s: float = 30.0) -> None:
        super().__init__()
        self.path = Path(path)
        self._busy_timeout_s = busy_timeout_s
        self._init_state_cache()  # thread states between batches (stores.sql.sqlite_states)
        self._init_event_cache()  # raw events for range reads (stores.sql.sqlite_events)
        self._init_readers(self._connect_reader)  # reads beside the writer (sqlite_readers)
        self._init_memory_cache()  # memories read since the last write (sqlite_memories)

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = self._connect_reader()
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KB}")
        return conn

    def _connect_reader(self) -> sqlite3.Connection:
        """A connection to the file (the write connection is one too, then set up for
        WAL and full sync)."""
        # isolation_level=None: the driver never opens transactions behind our back.
        conn = sqlite3.connect(str(self.path), timeout=self._busy_timeout_s,
                               isolation_level=None, check_same_thread=False)
        # a recall reads ~100 memory rows by id, spread over the file: mapped, those pages
        # are read in place (with the default 2 MB cache and no map, each was copied from
        # the OS again on every recall)
        conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KB}")
        conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        return conn

    def _begin(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def _commit(self) -> None:
        self._write_staged_states()
        self._conn.execute("COMMIT")
        self._memories_committed()
        self._states_committed()
        self._events_committed()

    def _rollback(self) -> None:
        self._states_discarded()
        self._events_discarded()
        # Some errors (disk full, I/O) make SQLite roll back by itself.
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def close(self) -> None:
        with self._lock:
            self.close_readers()
            self._memories_committed(reopened=True)
            self._forget_states()
            self._forget_events()
            super().close()

    def drop_tables(self) -> None:
        with self._lock:
            super().drop_tables()
            self._memories_committed(reopened=True)
            self._forget_states()
            self._forget_events()

    def forget_cached(self) -> None:
        """Drop every kept memory, chunk, event range and thread state (after an erasure,
        ``POST /v1/forget``: nothing forgotten is answered from memory); ports.ForgetsCached."""
        self._memories_committed(reopened=True)
        with self._lock:
            self._forget_events()
            self._forget_states()

    def _is_duplicate(self, exc: Exception) -> bool:
        return getattr(exc, "sqlite_errorcode", None) in _DUPLICATE_CODES

    # --- counters, many at once (the fair runner's per-thread marks) ----------------------

    def set_counters(self, values: Sequence[tuple[str, int]]) -> None:
        """:meth:`set_counter` for many names, in this order, in one statement."""
        if values:
            sql = self.dialect.upsert("kv_counters", ("name", "value"), ("name",), ("value",))
            with self.transaction():
                self._execute_many(sql, values)

    def drop_counters(self, names: Sequence[str]) -> None:
        """Remove named counters (absent names are ignored), in one statement."""
        if names:
            with self.transaction():
                self._execute_many("DELETE FROM kv_counters WHERE name = ?",
                                   [(name,) for name in names])

    # --- readiness probes ---------------------------------------------------------------

    def probe_write(self) -> None:
        """Take the write lock, write a row, roll back: raises when the file cannot be
        written (read-only, I/O error, corrupt pages on the path of the write)."""

        class _Rollback(Exception):
            pass

        try:
            with self.transaction():
                self._execute("INSERT OR REPLACE INTO kv_counters (name, value) VALUES (?, ?)",
                              ("__readyz_probe__", 0))
                raise _Rollback
        except _Rollback:
            pass

    def probe_read(self) -> None:
        """Read the schema and the first and last row of every table (their b-tree roots
        and edges): raises on pages that do not parse."""
        tables = [str(r[0]) for r in self._read(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        for name in tables:
            self._read(f'SELECT * FROM "{name}" LIMIT 1')
            self._read(f'SELECT * FROM "{name}" ORDER BY rowid DESC LIMIT 1')

    def quick_check(self) -> str:
        """``PRAGMA quick_check`` on a separate read-only connection (readers do not block
        the writer under WAL): ``"ok"`` or the first problem found."""
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=self._busy_timeout_s)
        try:
            rows = conn.execute("PRAGMA quick_check(5)").fetchall()
        finally:
            conn.close()
        return "ok" if rows == [("ok",)] else "; ".join(str(r[0]) for r in rows)

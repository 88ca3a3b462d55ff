"""The embedded default's database: one SQLite file.

WAL journal (readers in other processes do not block the writer) and ``synchronous=FULL``
so a committed transaction -- e.g. an accepted event in the log -- survives a power cut
before the HTTP 202 goes out. One write connection shared across threads
(``check_same_thread=False``), serialised by the database's re-entrant lock; transactions
start with ``BEGIN IMMEDIATE`` so the write lock is taken up front. Reads by threads that
do not hold that lock go to a few read-only connections and see the committed state
without waiting for the writer (:mod:`stores.sql.sqlite.readers`).

The embedded store keeps some rows in memory between statements (thread states, inserted
events, memories read by recall). Each such object is a :class:`TransactionListener` the
database tells what happens on the write connection: a statement about to run, a commit
about to happen and done, a rollback, and a reset (closed, tables dropped, an erasure).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from breadcrumb.stores.sql import packed
from breadcrumb.stores.sql.core import Row, SqlDatabase
from breadcrumb.stores.sql.schema import SQLITE
from breadcrumb.stores.sql.sqlite.readers import ReaderPool

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


class TransactionListener:
    """What rows kept in memory hear of the write connection (each does nothing unless
    overridden). Called with the database's lock held."""

    def statement(self, sql: str) -> None:
        """``sql`` is about to run on the write connection."""

    def before_commit(self) -> None:
        """The open transaction is about to commit (write what is staged)."""

    def committed(self) -> None:
        """The transaction committed."""

    def rolled_back(self) -> None:
        """The transaction rolled back."""

    def reset(self) -> None:
        """The connection closed, the tables were dropped or data was erased: forget
        every row kept."""


class SqliteDatabase(SqlDatabase):
    """One SQLite file at ``path``: a write connection, a pool of readers, and the
    listeners of the rows kept in memory (:class:`TransactionListener`).

    Why so many methods: it is a SqlDatabase (connection, transaction, statement helpers)
    with what a file adds: the reader connections, the WAL set-up, the listeners told of
    each statement, commit, rollback and reset, and the write connection's change count.
    """

    dialect = SQLITE
    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(self, path: Path, busy_timeout_s: float = 30.0) -> None:
        super().__init__()
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self._listeners: list[TransactionListener] = []
        self.readers = ReaderPool(self.connect_reader, self.dialect)

    def __repr__(self) -> str:
        return f"SqliteDatabase({str(self.path)!r})"

    def listen(self, *listeners: TransactionListener) -> None:
        """Tell ``listeners`` (in this order) what happens on the write connection."""
        self._listeners.extend(listeners)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = self.connect_reader()
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KB}")
        return conn

    def connect_reader(self) -> sqlite3.Connection:
        """A connection to the file (the write connection is one too, then set up for
        WAL and full sync)."""
        # isolation_level=None: the driver never opens transactions behind our back.
        conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout_s,
                               isolation_level=None, check_same_thread=False)
        packed.register(conn)  # bc_text(): compressed texts read in SQL (issue 49)
        # a recall reads ~100 memory rows by id, spread over the file: mapped, those pages
        # are read in place (with the default 2 MB cache and no map, each was copied from
        # the OS again on every recall)
        conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KB}")
        conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        return conn

    def _begin(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def _commit(self) -> None:
        for listener in self._listeners:
            listener.before_commit()
        self._conn.execute("COMMIT")
        for listener in self._listeners:
            listener.committed()

    def _rollback(self) -> None:
        for listener in self._listeners:
            listener.rolled_back()
        # Some errors (disk full, I/O) make SQLite roll back by itself.
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def _is_duplicate(self, exc: Exception) -> bool:
        return getattr(exc, "sqlite_errorcode", None) in _DUPLICATE_CODES

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        for listener in self._listeners:
            listener.statement(sql)
        return super().execute(sql, params)

    def execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        for listener in self._listeners:
            listener.statement(sql)
        super().execute_many(sql, rows)

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """A thread holding the lock reads through the write connection (and sees its
        own transaction); any other reads the committed state from the pool."""
        if self.writer_owned():
            return super().read(sql, params)
        self._require_open()
        return self.readers.read(sql, params)

    def reset(self) -> None:
        """Every listener forgets the rows it keeps (tables dropped, data erased)."""
        with self.lock:
            for listener in self._listeners:
                listener.reset()

    def close(self) -> None:
        with self.lock:
            self.readers.close()
            for listener in self._listeners:
                listener.reset()
            super().close()

    def total_changes(self) -> int:
        """Rows the write connection changed since it opened (any statement, committed or
        not); -1 when it is closed."""
        conn = self._conn
        return -1 if conn is None else int(conn.total_changes)

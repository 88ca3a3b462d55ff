"""Reads of the embedded store that never wait for its writer.

The store has one write connection, serialised by its database's re-entrant lock, and
every read used to take that lock too. A derivation batch holds it for its whole
transaction, so during an ingest burst a recall's five or six reads each waited for a
batch: ``POST /v1/recall`` answered in 0.2-2.6 s while the runner derived 5,000 events
(py-spy: 96 % of the recall threads' time in ``with self._lock``).

SQLite's WAL lets readers run beside a writer, each seeing the last committed state. So a
read by a thread that does not hold the lock goes to a small pool of read-only
connections and takes no writer lock; it sees what is committed, never a batch half
written. A thread inside its own transaction (or otherwise holding the lock) reads through
the write connection as before, and sees its own uncommitted writes
(:class:`~stores.sql.sqlite.database.SqliteDatabase` picks). The in-memory caches of
:mod:`stores.sql.sqlite.events` and :mod:`stores.sql.sqlite.states` follow the same rule (a
reader outside the transaction uses their committed part only).
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any

from breadcrumb.stores.sql.core import Row
from breadcrumb.stores.sql.schema import Dialect

#: Read-only connections kept at most (each has its own page cache); a read that finds
#: none free waits for one.
READERS = 3


class ReaderPool:
    """A few read-only connections to the file, opened on demand, for the reads of threads
    outside the writer's lock."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], dialect: Dialect,
                 size: int = READERS) -> None:
        self._connect = connect
        self._dialect = dialect
        self._readers: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._lock = threading.Lock()
        self._all: list[sqlite3.Connection] = []
        self._size = max(1, size)

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """The rows of a query on a pooled connection (the committed state)."""
        conn = self._take()
        try:
            cur = conn.execute(self._dialect.sql(sql), tuple(params))
            try:
                return [tuple(r) for r in cur.fetchall()]
            finally:
                cur.close()
        finally:
            self._give(conn)

    def _take(self) -> sqlite3.Connection:
        try:
            return self._readers.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            if len(self._all) < self._size:
                conn = self._connect()
                conn.execute("PRAGMA query_only=1")
                self._all.append(conn)
                return conn
        return self._readers.get()

    def _give(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            if conn not in self._all:  # closed meanwhile (close)
                conn.close()
                return
        self._readers.put(conn)

    def close(self) -> None:
        """Close the pooled connections; one in use by a read is closed when it is given
        back (``_give`` no longer knows it)."""
        with self._lock:
            self._all = []
        while True:
            try:
                self._readers.get_nowait().close()
            except queue.Empty:
                break

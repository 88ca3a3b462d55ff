"""Reads of the embedded store that never wait for its writer.

The store has one write connection, serialised by the base class's re-entrant lock, and
every read used to take that lock too. A derivation batch holds it for its whole
transaction, so during an ingest burst a recall's five or six reads each waited for a
batch: ``POST /v1/recall`` answered in 0.2-2.6 s while the runner derived 5,000 events
(py-spy: 96 % of the recall threads' time in ``with self._lock``).

SQLite's WAL lets readers run beside a writer, each seeing the last committed state. So a
read by a thread that does not hold the lock goes to a small pool of read-only
connections and takes no writer lock; it sees what is committed, never a batch half
written. A thread inside its own transaction (or otherwise holding the lock) reads through
the write connection as before, and sees its own uncommitted writes. The in-memory caches
of :mod:`stores.sql.sqlite_events` and :mod:`stores.sql.sqlite_states` follow the same rule (a
reader outside the transaction uses their committed part only).
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any

from breadcrumb.stores.sql.base import SqlStore
from breadcrumb.stores.sql.core import Row

#: Read-only connections kept at most (each has its own page cache); a read that finds
#: none free waits for one.
READERS = 3


class ReadPoolMixin(SqlStore):
    """``_read`` through a pool of read-only connections for threads outside the writer's
    lock (mixed in before :class:`~stores.sql.base.SqlStore`)."""

    def _init_readers(self, connect: Callable[[], sqlite3.Connection],
                      size: int = READERS) -> None:
        self._reader_connect = connect
        self._readers: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._reader_lock = threading.Lock()
        self._reader_all: list[sqlite3.Connection] = []
        self._reader_size = max(1, size)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        if self._writer_owned():
            return super()._read(sql, params)
        self._require_open()
        conn = self._take_reader()
        try:
            cur = conn.execute(self.dialect.sql(sql), tuple(params))
            try:
                return [tuple(r) for r in cur.fetchall()]
            finally:
                cur.close()
        finally:
            self._give_reader(conn)

    def _take_reader(self) -> sqlite3.Connection:
        try:
            return self._readers.get_nowait()
        except queue.Empty:
            pass
        with self._reader_lock:
            if len(self._reader_all) < self._reader_size:
                conn = self._reader_connect()
                conn.execute("PRAGMA query_only=1")
                self._reader_all.append(conn)
                return conn
        return self._readers.get()

    def _give_reader(self, conn: sqlite3.Connection) -> None:
        with self._reader_lock:
            if conn not in self._reader_all:  # closed meanwhile (close_readers)
                conn.close()
                return
        self._readers.put(conn)

    def close_readers(self) -> None:
        """Close the pooled connections; one in use by a read is closed when it is given
        back (``_give_reader`` no longer knows it)."""
        with self._reader_lock:
            self._reader_all = []
        while True:
            try:
                self._readers.get_nowait().close()
            except queue.Empty:
                break

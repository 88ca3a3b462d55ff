"""The SQL stores' core: one connection, its lock, transactions and statement helpers.

:class:`SqlDatabase` is what every table object of a SQL store (raw events, memories,
audit, dead letters, thread state, the log, counters, the lifecycle tables ...) reads and
writes through: each holds the store's one database and calls its public statement
helpers; none touches the connection itself. Subclasses supply the connection, the
:class:`~stores.sql.schema.Dialect` and how a transaction begins
(:mod:`stores.sql.sqlite.store`, :mod:`stores.sql.mysql.store`). One connection per store,
guarded by a re-entrant lock: the HTTP server and the background processor may share a
store across threads.

Every write runs inside :meth:`SqlDatabase.transaction`. Calls nested inside an open
transaction join it (nothing commits until the outermost block exits; an exception escaping
any level rolls the whole transaction back).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from typing import Any

from breadcrumb.stores.sql import schema as s

Row = tuple[Any, ...]
#: One row per dead letter written with a key (its position: ``log:<seq>`` or
#: ``<topic>/<partition>/<offset>``): a redelivered message is not dead-lettered twice.
DEAD_LETTER_KEYS = s._t("dead_letter_keys", "letter_key:key! dead_letter_id:int!", "letter_key")


class StoreError(Exception):
    """Base of the SQL stores' errors."""


class StoreClosedError(StoreError):
    """A method needing the database was called before ``open()`` or after ``close()``."""


class IndexConflictError(StoreError):
    """A different event already holds this (user_id, thread_id, index)."""


class TenantMismatchError(StoreError):
    """A memory id already belongs to another user."""


class WriterLock:
    """A re-entrant lock that tells whether the calling thread holds it (the store's one
    writer: its transaction, or a block that must see the transaction's writes)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._owner: int | None = None
        self._held = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self._lock.acquire(blocking, timeout):
            return False
        self._owner = threading.get_ident()
        self._held += 1
        return True

    def release(self) -> None:
        self._held -= 1
        if not self._held:
            self._owner = None
        self._lock.release()

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def owned(self) -> bool:
        """Whether the calling thread holds the lock."""
        return self._owner == threading.get_ident()


class SqlDatabase(ABC):
    """One SQL database: connection, transactions and the statements every table uses.

    Constructors do not connect; :meth:`connect` does (the store creates its tables).

    Why so many methods: the connection's life (connect, close), the transaction and its
    dialect hooks (connect, begin, commit, rollback, duplicate key), and the handful of
    statement helpers (execute, fetch, read, scalar, insert-unique, insert-id) every table
    object builds on; each is a few lines, kept in one place so no table object touches
    the connection itself.
    """

    dialect: s.Dialect
    #: Exception classes the driver raises on a UNIQUE / PRIMARY KEY violation.
    integrity_errors: tuple[type[Exception], ...] = ()

    def __init__(self) -> None:
        self.lock = WriterLock()
        self._conn: Any = None
        self._depth = 0

    # --- backend hooks ---------------------------------------------------------------------

    @abstractmethod
    def _connect(self) -> Any:
        """Open and return a DB-API connection."""

    @abstractmethod
    def _begin(self) -> None:
        """Start a transaction on ``self._conn``."""

    def _commit(self) -> None:
        self._conn.commit()

    def _rollback(self) -> None:
        self._conn.rollback()

    @abstractmethod
    def _is_duplicate(self, exc: Exception) -> bool:
        """True if an integrity error is a UNIQUE / PRIMARY KEY clash (not e.g. NOT NULL)."""

    # --- the connection --------------------------------------------------------------------

    def connect(self) -> bool:
        """Open the connection; False (and nothing done) when it is open already. The
        caller holds :attr:`lock` and creates the tables."""
        with self.lock:
            if self._conn is not None:
                return False
            self._conn = self._connect()
            return True

    def close(self) -> None:
        """Close the connection (safe to call twice). ``connect()`` may be called again."""
        with self.lock:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                conn.close()

    @contextmanager
    def transaction(self, keep: bool = True) -> Iterator[None]:
        """One atomic unit: commit when the outermost block exits, roll back on exception.
        ``keep=False``: roll back at the end too (a rehearsal: ``streams.rehearsal``); it
        must be the outermost block."""
        with self.lock:
            self._require_open()
            if self._depth and not keep:
                raise RuntimeError("a transaction that is rolled back must be the outermost")
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._begin()
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth = 0
                self._rollback()
                raise
            self._depth = 0
            if not keep:
                self._rollback()
                return
            try:
                self._commit()
            except BaseException:
                self._rollback()
                raise

    @contextmanager
    def serialized(self, users: Iterable[str]) -> Iterator[None]:
        """Hold ``users`` against every other writer of this database for the block (take
        it OUTSIDE ``transaction()``). A lifecycle step reads the user's other memories and
        facts (duplicates, supersession, verification), so two workers handling two threads
        of one user at once must not both miss the other's rows. One process per file here
        (SQLite): nothing to do; the MySQL database takes named server locks."""
        del users
        yield

    def writer_owned(self) -> bool:
        """Whether the calling thread holds the lock (its own transaction, or a block that
        must see the transaction's writes)."""
        return self.lock.owned()

    # --- statements (callers of execute / fetch hold the lock: a transaction) -----------

    def _require_open(self) -> Any:
        if self._conn is None:
            raise StoreClosedError(f"{type(self).__name__} is not open")
        return self._conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; the rows it changed."""
        with closing(self._require_open().cursor()) as cur:
            cur.execute(self.dialect.sql(sql), tuple(params))
            return int(cur.rowcount)

    def execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each row of parameters."""
        with closing(self._require_open().cursor()) as cur:
            cur.executemany(self.dialect.sql(sql), [tuple(r) for r in rows])

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        """Run an INSERT; the id the database gave the new row."""
        with closing(self._require_open().cursor()) as cur:
            cur.execute(self.dialect.sql(sql), tuple(params))
            return int(cur.lastrowid)

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """The rows of a query on the write connection (inside a transaction)."""
        with closing(self._require_open().cursor()) as cur:
            cur.execute(self.dialect.sql(sql), tuple(params))
            return [tuple(r) for r in cur.fetchall()]

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """A read outside (or inside) a transaction, under the lock."""
        with self.lock:
            return self.fetch(sql, params)

    def insert_unique(self, sql: str, params: Sequence[Any]) -> bool:
        """Run an INSERT; False when it hit a UNIQUE/PRIMARY KEY (statement rolled back only)."""
        try:
            self.execute(sql, params)
        except self.integrity_errors as exc:
            if not self._is_duplicate(exc):
                raise
            return False
        return True

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> int:
        """The first column of the first row as an int (0 for none or NULL)."""
        rows = self.read(sql, params)
        return int(rows[0][0] or 0) if rows else 0


def id_text(value: Any) -> str:
    """An id column as text (MySQL returns VARBINARY columns as bytes)."""
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)

"""The SQL stores' core: one connection, its lock, transactions and statement helpers.

:class:`SqlCore` is the base of every aggregate mixin (:mod:`stores.sql.events`,
:mod:`stores.sql.memories`, :mod:`stores.sql.audit`, :mod:`stores.sql.dead_letters`,
:mod:`stores.sql.states`); :class:`~stores.sql.base.SqlStore` composes them.
Subclasses supply the connection, the :class:`~stores.sql.schema.Dialect` and how a
transaction begins. One connection per store, guarded by a re-entrant lock: the HTTP server
and the background processor may share a store across threads.

Every write runs inside :meth:`SqlCore.transaction`. Calls nested inside an open
transaction join it (nothing commits until the outermost block exits; an exception escaping
any level rolls the whole transaction back).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from typing import Any

from breadcrumb.stores.sql import migrate as sql_migrate
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


class SqlCore(ABC):
    """One SQL database: connection, transactions and the statements every aggregate uses.

    Constructors do not connect; :meth:`open` connects and creates the tables (idempotent).

    Why so many methods: the connection's life (open, close, context manager, drop), the
    transaction and its dialect hooks (connect, begin, commit, rollback, duplicate key),
    and the handful of statement helpers (execute, fetch, read, scalar, insert-unique)
    every aggregate mixin builds on; each is a few lines, kept in one place so no
    aggregate touches the connection itself.
    """

    dialect: s.Dialect
    #: Exception classes the driver raises on a UNIQUE / PRIMARY KEY violation.
    integrity_errors: tuple[type[Exception], ...] = ()

    def __init__(self) -> None:
        self._lock = threading.RLock()
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

    # --- lifecycle --------------------------------------------------------------------------

    def open(self) -> None:
        """Connect and create missing tables and indexes. A second call does nothing."""
        with self._lock:
            if self._conn is not None:
                return
            self._conn = self._connect()
            try:
                with self.transaction():
                    for stmt in (x for t in (*s.TABLES, DEAD_LETTER_KEYS)
                                 for x in self.dialect.create_table(t)):
                        self._execute(stmt)
                    sql_migrate.upgrade(self)  # issue 12: schema version + upgrade steps
            except BaseException:
                self.close()  # a half-opened store must not look open
                raise

    def close(self) -> None:
        """Close the connection (safe to call twice). ``open()`` may be called again."""
        with self._lock:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                conn.close()

    def __enter__(self) -> SqlCore:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def drop_tables(self) -> None:
        """Drop every Breadcrumb table (tests, ``reset``). Call ``open()`` again to recreate."""
        with self.transaction():
            for name in (DEAD_LETTER_KEYS.name, *reversed(s.TABLE_NAMES)):
                self._execute(f"DROP TABLE IF EXISTS {name}")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic unit: commit when the outermost block exits, roll back on exception."""
        with self._lock:
            self._require_open()
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
        (SQLite): nothing to do; the MySQL store takes named server locks."""
        del users
        yield

    # --- statement helpers (callers hold the lock) ------------------------------------------

    def _require_open(self) -> Any:
        if self._conn is None:
            raise StoreClosedError(f"{type(self).__name__} is not open")
        return self._conn

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        with closing(self._require_open().cursor()) as cur:
            cur.execute(self.dialect.sql(sql), tuple(params))
            return int(cur.rowcount)

    def _execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with closing(self._require_open().cursor()) as cur:
            cur.executemany(self.dialect.sql(sql), [tuple(r) for r in rows])

    def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with closing(self._require_open().cursor()) as cur:
            cur.execute(self.dialect.sql(sql), tuple(params))
            return [tuple(r) for r in cur.fetchall()]

    def _writer_owned(self) -> bool:
        """Whether the calling thread holds the store lock (its own transaction, or a
        block that must see the transaction's writes)."""
        return bool(self._lock._is_owned())  # type: ignore[attr-defined]  # RLock: this thread

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """A read outside (or inside) a transaction, under the lock."""
        with self._lock:
            return self._fetch(sql, params)

    def _insert_unique(self, sql: str, params: Sequence[Any]) -> bool:
        """Run an INSERT; False when it hit a UNIQUE/PRIMARY KEY (statement rolled back only)."""
        try:
            self._execute(sql, params)
        except self.integrity_errors as exc:
            if not self._is_duplicate(exc):
                raise
            return False
        return True

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> int:
        rows = self._read(sql, params)
        return int(rows[0][0] or 0) if rows else 0


def id_text(value: Any) -> str:
    """An id column as text (MySQL returns VARBINARY columns as bytes)."""
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


class StoreTables:
    """A group of tables read and written through a SQL store's connection and lock."""

    def __init__(self, store: Any) -> None:
        self.store = store  # SqliteStore | MySqlStore (uses its transaction and helpers)

"""The SQL store both deployments use: one database and one object per table group.

:class:`SqlStore` hands out the objects that read and write its tables, each typed by its
port (:mod:`stores.ports`) and holding the store's one :class:`~stores.sql.core.SqlDatabase`:

* ``events`` -- raw events (:mod:`stores.sql.events`);
* ``memories`` and ``chunks`` -- memory rows and their source chunks (:mod:`stores.sql.memories`);
* ``audit`` -- who changed which field of a memory (:mod:`stores.sql.audit`);
* ``dead_letters`` -- rejected inputs (:mod:`stores.sql.dead_letters`);
* ``states`` -- each thread's segmenter state (:mod:`stores.sql.states`);
* ``log`` -- the embedded event log (:mod:`stores.sql.event_log`);
* ``counters`` -- named counters (:mod:`stores.sql.counters`);
* ``erasure`` and ``tombstones`` -- forgetting a scope, and what keeps it forgotten
  (:mod:`stores.sql.forget.erasure`, :mod:`stores.sql.forget.tombstones`);
* ``browse`` -- pages of memories, versions, threads, dead letters (:mod:`stores.sql.browse`);
* ``explore`` -- the dashboard explorer's tenants, threads and fact keys
  (:mod:`stores.sql.explore`);
* ``lifecycle_tables`` -- the lifecycle's facts, lives, changelog and archived ranges
  (:mod:`stores.sql.lifecycle`; their tables are created by its ``open()``).

:class:`~stores.sql.sqlite.store.SqliteStore` and :class:`~stores.sql.mysql.store.MySqlStore`
build it with their database and, for SQLite, the objects that keep rows in memory. The
store itself only opens and closes the database and groups writes in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Self

from breadcrumb.stores.sql import migrate as sql_migrate
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.audit import SqlAudit
from breadcrumb.stores.sql.browse import SqlBrowse
from breadcrumb.stores.sql.core import DEAD_LETTER_KEYS, SqlDatabase
from breadcrumb.stores.sql.counters import SqlCounters
from breadcrumb.stores.sql.dead_letters import SqlDeadLetters
from breadcrumb.stores.sql.event_log import SqlEventLog
from breadcrumb.stores.sql.events import SqlEvents
from breadcrumb.stores.sql.explore import SqlExplore
from breadcrumb.stores.sql.forget.erasure import SqlErasure
from breadcrumb.stores.sql.forget.tombstones import SqlTombstones
from breadcrumb.stores.sql.lifecycle import LifecycleTables
from breadcrumb.stores.sql.memories import SqlChunks, SqlMemories
from breadcrumb.stores.sql.states import SqlThreadStates


class SqlStore:
    """The table objects of one SQL database (see the module docstring).

    Constructors do not connect; :meth:`open` connects and creates the tables (idempotent).
    """

    def __init__(self, db: SqlDatabase, events: SqlEvents, memories: SqlMemories,
                 states: SqlThreadStates, counters: SqlCounters, control: str = "") -> None:
        self.db = db  # the store's objects, tests and benches run SQL through it
        self.events = events
        self.memories = memories
        self.chunks: SqlChunks = memories.chunks
        self.states = states
        self.counters = counters
        self.audit = SqlAudit(db)
        self.dead_letters = SqlDeadLetters(db, counters)
        self.log = SqlEventLog(db)
        self.erasure = SqlErasure(db, memories, control)  # control: the tombstones' database
        self.tombstones = SqlTombstones(self.erasure)
        self.lifecycle_tables = LifecycleTables.on(db)
        self.browse = SqlBrowse(db, memories)
        self.explore = SqlExplore(db, self.browse)

    def open(self) -> None:
        """Connect and create missing tables and indexes. A second call does nothing."""
        with self.db.lock:
            if not self.db.connect():
                return
            try:
                with self.db.transaction():
                    for stmt in (x for t in (*s.TABLES, DEAD_LETTER_KEYS)
                                 for x in self.db.dialect.create_table(t)):
                        self.db.execute(stmt)
                    sql_migrate.upgrade(self.db)  # issue 12: schema version + upgrade steps
            except BaseException:
                self.close()  # a half-opened store must not look open
                raise

    def close(self) -> None:
        """Close the connection (safe to call twice). ``open()`` may be called again."""
        self.db.close()

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def drop_tables(self) -> None:
        """Drop every Breadcrumb table (tests, ``reset``). Call ``open()`` again to recreate."""
        with self.db.transaction():
            for name in (DEAD_LETTER_KEYS.name, *reversed(s.TABLE_NAMES)):
                self.db.execute(f"DROP TABLE IF EXISTS {name}")

    def transaction(self, keep: bool = True) -> AbstractContextManager[None]:
        """One atomic unit over every table object of the store (``Transactional``);
        ``keep=False``: rolled back at the end (a rehearsal)."""
        return self.db.transaction(keep)

    def serialized(self, users: Iterable[str]) -> AbstractContextManager[None]:
        """:meth:`SqlDatabase.serialized`: hold ``users`` against the other writers of
        this database (take it outside the transaction)."""
        return self.db.serialized(users)

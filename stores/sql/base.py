"""The SQL store both deployments use: :class:`~stores.sql.sqlite_store.SqliteStore` and
:class:`~stores.sql.mysql_store.MySqlStore` subclass :class:`SqlStore`.

One class per aggregate, all on the one connection of :class:`~stores.sql.core.SqlCore`:
raw events (:mod:`stores.sql.events`), memories and chunks (:mod:`stores.sql.memories`),
the audit trail (:mod:`stores.sql.audit`), dead letters (:mod:`stores.sql.dead_letters`),
thread state, the embedded event log and counters (:mod:`stores.sql.states`). The lifecycle
tables (facts, lives, archived ranges) are :class:`~stores.sql.lifecycle.LifecycleTables`.
"""

from __future__ import annotations

from breadcrumb.stores.sql.audit import AuditSql
from breadcrumb.stores.sql.dead_letters import DeadLettersSql
from breadcrumb.stores.sql.events import EventsSql
from breadcrumb.stores.sql.memories import ChunksSql, MemoriesSql
from breadcrumb.stores.sql.states import LogStateMixin


class SqlStore(EventsSql, MemoriesSql, ChunksSql, AuditSql, DeadLettersSql, LogStateMixin):
    """RawEventStore + MemoryStore + DeadLetterStore + ThreadStateStore over one SQL database.

    Constructors do not connect; :meth:`open` connects and creates the tables (idempotent).
    """

"""The lifecycle's SQL tables, on the database of a :class:`~stores.sql.base.SqlStore`.

* ``memory_facts`` — (user_id, fact_key) → memory_id, value, ts, state: finds the older
  memories of a user that hold the same fact key (``state`` = current | superseded).
* ``memory_lifecycle`` — per memory: ``tier_since`` and the sweeper's hit window.
* ``memory_changelog`` — the embedded stand-in for the compacted ``memory-status`` topic
  (``payload`` NULL = tombstone); replayed in ``seq`` order. Compacted as it is written:
  the latest value of each memory is kept (issue 49: 3.5 rows a memory, 115 B per stored
  event at a million events, before).
* ``archived_ranges`` — source ranges whose events live in cold storage.

Dialect-agnostic and TiDB-compatible like ``stores.sql.schema`` (which renders the DDL).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from breadcrumb.stores.ports.tables import ArchivedRanges, FactTable, LifeTable, MemoryChangelog
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.archived import SqlArchivedRanges
from breadcrumb.stores.sql.core import SqlDatabase
from breadcrumb.stores.sql.facts import SqlFacts
from breadcrumb.stores.sql.lives import SqlLives, SqlMemoryChangelog

TABLES: tuple[s.Table, ...] = (
    s._t("memory_facts",
         "memory_id:uid! fact_key:uid! user_id:uid! value:text! ts:ts! state:short!",
         "memory_id fact_key", indexes=(("user_id", "fact_key"),),
         # a key's history grows with the data (700 superseded rows a key and tenant at a
         # million events of the cost bench): the current rows by equality on state, and
         # every row of a key (replicas are looked for in any state) without reading the
         # table; with the IN lists of several keys SQLite prefers a covering index to a
         # partial one, so one index serves both (0.8-4.2 ms -> 0.01-0.02 ms and 4.1 ->
         # 0.65 ms a statement at a million)
         sqlite_indexes=(("cover", ("user_id", "fact_key", "state", "memory_id", "value",
                                    "ts"), ""),)),
    s._t("memory_lifecycle",
         "memory_id:uid! user_id:uid! tier_since:ts! hits_base:int!=0 window_start:ts",
         "memory_id"),
    s._t("memory_changelog",
         "seq:serial! memory_id:uid! user_id:uid! payload:text at:ts!",
         # compacted like the topic it stands in for: a memory's new value replaces its
         # older ones (``SqlMemoryChangelog.append_change``), found by this index
         "seq", indexes=(("user_id", "memory_id"),), mysql_options=s._TIDB_MONOTONIC),
    s._t("archived_ranges",
         "user_id:uid! thread_id:tid! start_idx:int! end_idx:int! object_key:text!",
         "user_id thread_id start_idx"),
)


@dataclass(frozen=True)
class LifecycleTables:
    """The lifecycle's table objects on one database: ``facts``
    (:mod:`stores.sql.facts`), ``lives`` and ``changelog`` (:mod:`stores.sql.lives`),
    ``archived`` (:mod:`stores.sql.archived`). A derivation batch puts its own facts and
    lives in front (:meth:`within`, ``stores.sql.facts_batch``)."""

    db: SqlDatabase
    facts: FactTable
    lives: LifeTable
    changelog: MemoryChangelog
    archived: ArchivedRanges

    @classmethod
    def on(cls, db: SqlDatabase) -> LifecycleTables:
        """The SQL table objects of ``db`` (nothing connects or runs)."""
        return cls(db, SqlFacts(db), SqlLives(db), SqlMemoryChangelog(db),
                   SqlArchivedRanges(db))

    def within(self, facts: FactTable, lives: LifeTable) -> LifecycleTables:
        """The same tables with ``facts`` and ``lives`` in front (a batch's)."""
        return replace(self, facts=facts, lives=lives)

    def open(self) -> None:
        """Create the tables (idempotent)."""
        with self.db.transaction():
            for table in TABLES:
                for stmt in self.db.dialect.create_table(table):
                    self.db.execute(stmt)

    def drop(self) -> None:
        """Drop the lifecycle tables (tests)."""
        with self.db.transaction():
            for table in TABLES:
                self.db.execute(f"DROP TABLE IF EXISTS {table.name}")

"""Erasure (issue 26): forget a memory, a thread or a whole tenant in a SQL store, and the
tombstones that keep them forgotten.

What one erasure removes from a store (every table that holds the scope's data): the raw
events, the event-log entries (the embedded log is the truth a replay reads), memories,
chunk rows, facts, lifecycle rows, memory audit and changelog rows, thread state (the
open window holds event texts), archived-range records, the runner's per-thread marks,
and the dead letters whose payload names the scope. What it writes:

* a **tombstone** (``stores.sql.forget.tombstones``: the tables are created here), checked by intake
  and by the processors, so no re-import, redelivery or replay brings the data back;
* one **erasure audit** row (``erasure_audit``): who, when, which scope kind, how many
  rows -- never content.

SQLite: deletes run with ``secure_delete`` on (freed pages are zeroed) and the WAL is
checkpointed and truncated afterwards, so the erased texts are not left in the file.
The vector points, cold objects and in-process caches are the caller's
(``query_api.routes.forget``) to remove: this module is SQL only. :class:`SqlErasure` is the
``erasure`` a SQL store hands out (``stores.ports.tables.Erasure``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from breadcrumb.stores.ports.tables import Plan, Scope
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.browse import json_field_like, like_pattern
from breadcrumb.stores.sql.core import SqlDatabase, id_text
from breadcrumb.stores.sql.memories import SqlMemories
from breadcrumb.stores.sql.packed import SQL_FUNCTION, packer, unpack
from breadcrumb.topics.records import thread_key

__all__ = ["LINK_FIELDS", "PASSAGES_PENDING", "SCOPES", "SHARED", "TABLES", "THREAD_MARK", "Plan",
           "Scope", "SqlErasure", "control_home"]
SCOPES = ("memory", "thread", "tenant")  # the kinds of a Scope (stores.ports.tables)
# streams.embedded.fair_schedule.THREAD_MARK (stores may not import it)
THREAD_MARK = "applied_seq/"
PASSAGES_PENDING = "passages_pending/"  # streams.passage_lane.PENDING
TABLES: tuple[s.Table, ...] = (
    s._t("erasure_tombstones",
         "id:serial! user_id:uid! scope:short! thread_hash:short erased_at:ts! actor:short!",
         "id", indexes=(("user_id",),), mysql_options=s._TIDB_MONOTONIC),
    s._t("erased_events", "user_id:uid! event_hash:short!", "user_id event_hash"),
    s._t("erasure_audit",
         "id:serial! user_id:uid! scope:short! at:ts! actor:short! counts:json!",
         "id", mysql_options=s._TIDB_MONOTONIC),
    s._t("dead_letter_redrives",
         "dead_letter_id:int! at:ts! actor:short! outcome:short!", "dead_letter_id"),
)


#: Tables every generation's processors read: in MySQL they live in the control database
#: (``{database}`` of generation ``main``; a generation ``G`` runs in ``{database}__G``), so
#: a replay into a new generation sees the erasures made before it.
SHARED = ("erasure_tombstones", "erased_events")
LINK_FIELDS = ("supersedes_facts", "superseded_facts")  # metadata: per-fact links


def control_home(database: str | None) -> str:
    """The qualifier of the :data:`SHARED` tables: MySQL's control database (of
    ``database``, a generation's), or none (SQLite: ``None``)."""
    return "" if database is None else f"`{database.split('__')[0]}`."


class SqlErasure:
    """Erasure in one SQL store: the plan of a scope, its deletes in one transaction, the
    erasure audit, and the tables tombstones and re-drives live in (created once).

    ``control`` is the qualifier of the :data:`SHARED` tables (:func:`control_home`)."""

    def __init__(self, db: SqlDatabase, memories: SqlMemories, control: str = "") -> None:
        self.db = db
        self.memories = memories
        self.control = control
        self._ready = False
        self._ready_lock = threading.Lock()

    def ensure_tables(self) -> None:
        """Create this module's tables once per store (idempotent)."""
        with self._ready_lock:
            if self._ready:
                return
            with self.db.transaction():
                for table in TABLES:
                    home = self.control if table.name in SHARED else ""
                    for stmt in self.db.dialect.create_table(table):
                        self.db.execute(stmt.replace(f"EXISTS {table.name} ",
                                                     f"EXISTS {home}{table.name} ", 1))
            self._ready = True

    def table(self, name: str) -> str:
        """A table's name as a statement names it (a :data:`SHARED` one qualified)."""
        return f"{self.control}{name}"

    def has_table(self, name: str, shared: bool = False) -> bool:
        """Whether the table exists (a read: never DDL)."""
        if self.db.dialect.mysql:
            schema = self.control.strip("`.") if shared else None
            sql = ("SELECT 1 FROM information_schema.tables WHERE table_schema = "
                   f"{'?' if schema else 'DATABASE()'} AND table_name = ?")
            return bool(self.db.read(sql, (schema, name) if schema else (name,)))
        sql = "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?"
        return bool(self.db.read(sql, (name,)))

    # --- planning -----------------------------------------------------------------------

    def plan(self, scope: Scope) -> Plan | None:
        """The rows an erasure of ``scope`` removes from this store; None when a memory
        scope names no memory of the user."""
        p = Plan(scope)
        u = scope.user_id
        if scope.kind == "memory":
            row = self.memories.get_memory_row(u, scope.memory_id or "")
            if row is None:
                return None
            p.memory_ids = [row["id"]]
            p.thread_id, p.start, p.end = (row["source_thread_id"],
                                           int(row["source_start_index"]),
                                           int(row["source_end_index"]))
            p.event_ids = [id_text(r[0]) for r in self.db.read(
                "SELECT event_id FROM raw_events WHERE user_id = ? AND thread_id = ? AND "
                "idx >= ? AND idx <= ?", (u, p.thread_id, p.start, p.end))]
            p.cold_keys = self._archived("user_id = ? AND thread_id = ? AND start_idx <= ? AND "
                                         "end_idx >= ?", (u, p.thread_id, p.end, p.start))
            return p
        where, params = ("user_id = ?", (u,)) if scope.kind == "tenant" else \
            ("user_id = ? AND source_thread_id = ?", (u, scope.thread_id))
        p.memory_ids = [id_text(r[0]) for r in self.db.read(
            f"SELECT id FROM agent_memories WHERE {where}", params)]
        p.thread_id = scope.thread_id
        cold_where = "user_id = ?" if scope.kind == "tenant" else "user_id = ? AND thread_id = ?"
        p.cold_keys = self._archived(cold_where, params)
        return p

    def _archived(self, where: str, params: Sequence[Any]) -> list[str]:
        if not self.has_table("archived_ranges"):
            return []
        return [id_text(r[0]) for r in self.db.read(
            f"SELECT object_key FROM archived_ranges WHERE {where}", params)]

    # --- erasing ------------------------------------------------------------------------

    def erase(self, p: Plan) -> dict[str, int]:
        """Delete every row of the plan in one transaction; rows per table."""
        counts: dict[str, int] = {}
        db = self.db
        secure = not db.dialect.mysql
        with db.lock:
            if secure:
                db.execute("PRAGMA secure_delete = ON")
            try:
                with db.transaction():
                    for table, where, params in self._deletes(p):
                        if self.has_table(table):
                            n = db.execute(f"DELETE FROM {table} WHERE {where}", params)
                            counts[table] = counts.get(table, 0) + max(int(n), 0)
                    self._drop_marks(p)
                    counts["unlinked_memories"] = self._unlink(p)
            finally:
                if secure:
                    db.execute("PRAGMA secure_delete = OFF")
                    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return {k: v for k, v in counts.items() if v}

    def _deletes(self, p: Plan) -> Iterable[tuple[str, str, tuple[Any, ...]]]:
        u, kind = p.scope.user_id, p.scope.kind
        for start in range(0, len(p.memory_ids), 400):
            ids = tuple(p.memory_ids[start:start + 400])
            for table, col in (("memory_facts", "memory_id"), ("memory_lifecycle", "memory_id"),
                               ("memory_audit", "memory_id"), ("memory_changelog", "memory_id"),
                               ("source_chunks", "memory_id"), ("agent_memories", "id")):
                yield table, f"user_id = ? AND {_in(col, ids)}", (u, *ids)
        if kind == "tenant":
            for table in ("raw_events", "source_chunks", "agent_memories", "memory_facts",
                          "memory_lifecycle", "memory_audit", "memory_changelog", "event_log",
                          "archived_ranges"):
                yield table, "user_id = ?", (u,)
            prefix = thread_key(u, "")
            yield "thread_state", "state_key >= ? AND state_key < ?", (prefix, prefix[:-1] + "0")
            yield from self._letters(u, None)
        elif kind == "thread":
            t = p.thread_id or ""
            yield "raw_events", "user_id = ? AND thread_id = ?", (u, t)
            yield "source_chunks", "user_id = ? AND thread_id = ?", (u, t)
            yield "event_log", "thread_key = ?", (thread_key(u, t),)
            yield "thread_state", "state_key = ?", (thread_key(u, t),)
            yield "archived_ranges", "user_id = ? AND thread_id = ?", (u, t)
            yield from self._letters(u, t)
        else:
            t = p.thread_id or ""
            yield ("raw_events", "user_id = ? AND thread_id = ? AND idx >= ? AND idx <= ?",
                   (u, t, p.start, p.end))
            for start in range(0, len(p.event_ids), 400):
                ids = tuple(p.event_ids[start:start + 400])
                yield "event_log", f"user_id = ? AND {_in('event_id', ids)}", (u, *ids)
            yield ("archived_ranges", "user_id = ? AND thread_id = ? AND start_idx <= ? AND "
                   "end_idx >= ?", (u, t, p.end, p.start))

    def _letters(self, user_id: str, thread_id: str | None
                 ) -> Iterable[tuple[str, str, tuple[Any, ...]]]:
        """Dead letters of the scope: by their user_id column, or (letters written by the
        processors carry none) by the ids in the payload as received."""
        like = json_field_like("user_id", user_id)
        where, params = "(user_id = ? OR payload LIKE ? ESCAPE '!')", [user_id, like]
        if thread_id is not None:
            where += " AND payload LIKE ? ESCAPE '!'"
            params.append(json_field_like("thread_id", thread_id))
        ids = [int(r[0]) for r in self.db.read(f"SELECT id FROM dead_letters WHERE {where}",
                                               params)]
        for start in range(0, len(ids), 400):
            part = tuple(str(i) for i in ids[start:start + 400])
            yield "dead_letter_keys", f"dead_letter_id IN ({s.marks(len(part))})", part
            yield "dead_letter_redrives", f"dead_letter_id IN ({s.marks(len(part))})", part
            yield "dead_letters", f"id IN ({s.marks(len(part))})", part

    def _unlink(self, p: Plan) -> int:
        """The user's other memories lose their links to the erased ones: the supersession
        ids, and the per-fact links in their metadata (which quote the erased value)."""
        if p.scope.kind == "tenant" or not p.memory_ids:
            return 0
        u, gone = p.scope.user_id, set(p.memory_ids)
        for start in range(0, len(p.memory_ids), 400):
            ids = tuple(p.memory_ids[start:start + 400])
            for col in ("supersedes_memory_id", "superseded_by"):
                self.db.execute(f"UPDATE agent_memories SET {col} = NULL WHERE user_id = ? AND "
                                f"{_in(col, ids)}", (u, *ids))
        changed = 0
        mysql = self.db.dialect.mysql
        text_of = "metadata" if mysql else f"{SQL_FUNCTION}(metadata)"  # maybe compressed
        pack = packer(mysql)
        for mid in p.memory_ids:
            rows = self.db.read(f"SELECT id, metadata FROM agent_memories WHERE user_id = ? AND "
                                f"{text_of} LIKE ? ESCAPE '!'", (u, like_pattern(mid)))
            for other, text in rows:
                meta = json.loads(unpack(text))
                if _drop_links(meta, gone):
                    self.db.execute("UPDATE agent_memories SET metadata = ? WHERE id = ?",
                                    (pack(s.dumps(meta)), other))
                    changed += 1
        return changed

    def _drop_marks(self, p: Plan) -> None:
        """The runner's per-thread marks and pending-passage counters of the scope."""
        u = p.scope.user_id
        if p.scope.kind == "tenant":
            prefix = THREAD_MARK + thread_key(u, "")
            self.db.execute("DELETE FROM kv_counters WHERE name >= ? AND name < ?",
                            (prefix, prefix[:-1] + "0"))
        elif p.scope.kind == "thread":
            self.db.execute("DELETE FROM kv_counters WHERE name = ?",
                            (THREAD_MARK + thread_key(u, p.thread_id or ""),))
        for mid in p.memory_ids:
            self.db.execute("DELETE FROM kv_counters WHERE name = ?",
                            (PASSAGES_PENDING + json.dumps([u, mid], separators=(",", ":")),))

    # --- the erasure audit ------------------------------------------------------------

    def write_audit(self, scope: Scope, at: str, actor: str, counts: dict[str, int]) -> None:
        """The erasure audit row: who, when, which kind of scope, how many rows. No
        content."""
        self.ensure_tables()
        with self.db.transaction():
            self.db.execute("INSERT INTO erasure_audit (user_id, scope, at, actor, counts) "
                            "VALUES (?, ?, ?, ?, ?)",
                            (scope.user_id, scope.kind, at, actor, s.dumps(counts)))

    def list_audit(self, user_id: str | None) -> list[dict[str, Any]]:
        """Erasure audit rows, oldest first (one tenant's, or all for None)."""
        self.ensure_tables()
        where, params = ("WHERE user_id = ? ", (user_id,)) if user_id is not None else ("", ())
        rows = self.db.read("SELECT user_id, scope, at, actor, counts FROM erasure_audit "
                            f"{where}ORDER BY id", params)
        return [{"user_id": id_text(u), "scope": sc, "at": a, "actor": ac,
                 "counts": json.loads(c)} for u, sc, a, ac, c in rows]


def _in(column: str, ids: Sequence[str]) -> str:
    return f"{column} IN ({s.marks(len(ids))})"


def _drop_links(meta: dict[str, Any], gone: set[str]) -> bool:
    changed = False
    for name in LINK_FIELDS:
        links = meta.get(name)
        if not isinstance(links, dict):
            continue
        kept = {k: v for k, v in links.items() if not (isinstance(v, dict) and (
            v.get("memory_id") in gone or v.get("superseded_by") in gone))}
        if len(kept) != len(links):
            changed = True
            if kept:
                meta[name] = kept
            else:
                del meta[name]
    return changed

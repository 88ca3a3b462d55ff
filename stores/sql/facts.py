"""The lifecycle's SQL tables, on the same connection as a :class:`~stores.sql.base.SqlStore`.

* ``memory_facts`` — (user_id, fact_key) → memory_id, value, ts, state: finds the older
  memories of a user that hold the same fact key (``state`` = current | superseded).
* ``memory_lifecycle`` — per memory: ``tier_since`` and the sweeper's hit window.
* ``memory_changelog`` — the embedded stand-in for the compacted ``memory-status`` topic
  (``payload`` NULL = tombstone); replayed in ``seq`` order.
* ``archived_ranges`` — source ranges whose events live in cold storage.

Dialect-agnostic and TiDB-compatible like ``stores.sql.schema`` (which renders the DDL).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from breadcrumb.processors.lifecycle import MemoryLife
from breadcrumb.processors.supersession import FactRow
from breadcrumb.stores.sql import schema as s

TABLES: tuple[s.Table, ...] = (
    s._t("memory_facts",
         "memory_id:uid! fact_key:uid! user_id:uid! value:text! ts:ts! state:short!",
         "memory_id fact_key", indexes=(("user_id", "fact_key"),)),
    s._t("memory_lifecycle",
         "memory_id:uid! user_id:uid! tier_since:ts! hits_base:int!=0 window_start:ts",
         "memory_id"),
    s._t("memory_changelog",
         "seq:serial! memory_id:uid! user_id:uid! payload:text at:ts!",
         "seq", mysql_options=s._TIDB_MONOTONIC),
    s._t("archived_ranges",
         "user_id:uid! thread_id:tid! start_idx:int! end_idx:int! object_key:text!",
         "user_id thread_id start_idx"),
)
_FACT_COLUMNS = ("memory_id", "fact_key", "user_id", "value", "ts", "state")
MAX_KEY_BYTES = 500  # fact keys longer than this are not tracked (VARBINARY(512) column)
_LIFE_SQL = (
    "SELECT m.id, m.user_id, m.project_id, m.status, m.tier, m.hit_count, m.last_used_at, "
    "m.created_at, l.tier_since, l.hits_base, l.window_start FROM agent_memories m "
    "LEFT JOIN memory_lifecycle l ON l.memory_id = m.id"
)


class LifecycleTables:
    """Reads and writes of the lifecycle tables through a SqlStore's connection and lock."""

    def __init__(self, store: Any) -> None:
        self.store = store  # SqliteStore | MySqlStore (uses its transaction and helpers)

    def open(self) -> None:
        """Create the tables (idempotent)."""
        with self.store.transaction():
            for table in TABLES:
                for stmt in self.store.dialect.create_table(table):
                    self.store._execute(stmt)

    def drop(self) -> None:
        """Drop the lifecycle tables (tests)."""
        with self.store.transaction():
            for table in TABLES:
                self.store._execute(f"DROP TABLE IF EXISTS {table.name}")

    # --- facts -------------------------------------------------------------------------
    def replace_facts(self, user_id: str, memory_id: str, facts: Sequence[FactRow],
                      held: Sequence[str] | None = None) -> list[str]:
        """The memory's facts, all ``current`` (replaces earlier rows of the memory);
        returns the keys it holds now. ``held``: the keys it holds before, when the caller
        knows them (a batch read them at once, ``fact_keys_of``).

        Written as a diff, never DELETE-then-INSERT: rows of keys the memory no longer
        holds are deleted by primary key, the others upserted. A range DELETE takes gap
        locks that deadlock (MySQL 1213) with another worker inserting next to them."""
        rows = [(f.memory_id, f.key, user_id, f.value, f.ts, "current") for f in facts
                if len(f.key.encode()) <= MAX_KEY_BYTES]
        keep = {r[1] for r in rows}
        with self.store.transaction():
            if held is None:
                held = [_key(k) for (k,) in self.store._fetch(
                    "SELECT fact_key FROM memory_facts WHERE memory_id = ?", (memory_id,))]
            for key in held:
                if key not in keep:
                    self.store._execute("DELETE FROM memory_facts WHERE memory_id = ? AND "
                                        "fact_key = ?", (memory_id, key))
            if rows:
                self.store._execute_many(self.store.dialect.upsert(
                    "memory_facts", _FACT_COLUMNS, ("memory_id", "fact_key"), _FACT_COLUMNS[2:]),
                    rows)
        return list(dict.fromkeys(r[1] for r in rows))

    def fact_keys_of(self, memory_ids: Sequence[str]) -> dict[str, list[str]]:
        """Issue 14: the fact keys each memory holds (every id present, one read per 500)."""
        ids = list(dict.fromkeys(memory_ids))
        out: dict[str, list[str]] = {m: [] for m in ids}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            for mid, key in self.store._read(
                    "SELECT memory_id, fact_key FROM memory_facts WHERE memory_id IN "
                    f"({s.marks(len(part))})", part):
                out[_key(mid)].append(_key(key))
        return out

    def current_facts(self, user_id: str, keys: Sequence[str]) -> list[FactRow]:
        """Current facts of these keys held by the user's active or conflicted memories."""
        if not keys:
            return []
        rows = self.store._read(
            "SELECT f.memory_id, f.fact_key, f.value, f.ts FROM memory_facts f "
            "JOIN agent_memories m ON m.id = f.memory_id AND m.user_id = f.user_id "
            f"WHERE f.user_id = ? AND f.fact_key IN ({s.marks(len(keys))}) "
            "AND f.state = 'current' AND m.status IN ('active', 'conflicted')",
            (user_id, *keys))
        return [FactRow(str(m), str(k), str(v), str(t)) for m, k, v, t in rows]

    def current_facts_any_status(self, user_id: str, keys: Sequence[str]
                                 ) -> list[tuple[FactRow, str]]:
        """``current_facts`` before its status filter: (fact, the memory's status), in the
        same order (the same join; the batch filters on statuses it has not written yet)."""
        if not keys:
            return []
        rows = self.store._read(
            "SELECT f.memory_id, f.fact_key, f.value, f.ts, m.status FROM memory_facts f "
            "JOIN agent_memories m ON m.id = f.memory_id AND m.user_id = f.user_id "
            f"WHERE f.user_id = ? AND f.fact_key IN ({s.marks(len(keys))}) "
            "AND f.state = 'current'", (user_id, *keys))
        return [(FactRow(str(m), str(k), str(v), str(t)), str(st)) for m, k, v, t, st in rows]

    def facts_in_any_state(self, user_id: str, keys: Sequence[str]) -> list[FactRow]:
        """Facts of these keys held by any of the user's memories, whatever the fact's
        state or the memory's status (duplicates are the same whatever happened since)."""
        if not keys:
            return []
        rows = self.store._read(
            "SELECT memory_id, fact_key, value, ts FROM memory_facts WHERE user_id = ? "
            f"AND fact_key IN ({s.marks(len(keys))})", (user_id, *keys))
        return [FactRow(str(m), str(k), str(v), str(t)) for m, k, v, t in rows]

    def facts_of(self, memory_id: str, state: str = "current") -> list[FactRow]:
        """One memory's facts in a state."""
        rows = self.store._read("SELECT memory_id, fact_key, value, ts FROM memory_facts "
                                "WHERE memory_id = ? AND state = ?", (memory_id, state))
        return [FactRow(str(m), str(k), str(v), str(t)) for m, k, v, t in rows]

    def fact_states_of(self, memory_id: str) -> list[tuple[str, str]]:
        """(key, state) of every fact of one memory (``facts_of`` of each state at once)."""
        rows = self.store._read("SELECT fact_key, state FROM memory_facts WHERE memory_id = ?",
                                (memory_id,))
        return [(_key(k), str(st)) for k, st in rows]

    def mark_fact(self, memory_id: str, key: str, state: str) -> None:
        """Set one fact's state."""
        with self.store.transaction():
            self.store._execute("UPDATE memory_facts SET state = ? WHERE memory_id = ? "
                                "AND fact_key = ?", (state, memory_id, key))

    # --- memories ----------------------------------------------------------------------
    def set_metadata(self, user_id: str, memory_id: str, metadata: dict[str, Any]) -> None:
        """Overwrite a memory's metadata JSON."""
        with self.store.transaction():
            self.store._execute("UPDATE agent_memories SET metadata = ? WHERE id = ? "
                                "AND user_id = ?", (s.dumps(metadata), memory_id, user_id))

    def owner_of(self, memory_id: str) -> str | None:
        """The user a memory id belongs to (a tombstone carries only the id)."""
        rows = self.store._read("SELECT user_id FROM agent_memories WHERE id = ?", (memory_id,))
        return str(rows[0][0]) if rows else None

    def delete_memory(self, user_id: str, memory_id: str) -> bool:
        """Remove a memory and everything keyed by it (a tombstone); True if it existed."""
        with self.store.transaction():
            for table, col in (("memory_facts", "memory_id"), ("memory_lifecycle", "memory_id"),
                               ("source_chunks", "memory_id")):
                self.store._execute(f"DELETE FROM {table} WHERE {col} = ? AND user_id = ?",
                                    (memory_id, user_id))
            return bool(self.store._execute(
                "DELETE FROM agent_memories WHERE id = ? AND user_id = ?", (memory_id, user_id)))

    # --- lifecycle rows ----------------------------------------------------------------
    def ensure_life(self, user_id: str, memory_id: str, since: str) -> None:
        """Create the memory's lifecycle row if missing (one statement: an existing row
        is left as it is)."""
        with self.store.transaction():
            self.store._execute(self.insert_missing_life_sql(),
                                (memory_id, user_id, since, 0, since))

    def insert_missing_life_sql(self) -> str:
        """The statement of :meth:`ensure_life` (one row: memory_id, user_id, tier_since,
        hits_base, window_start; an existing row is left as it is)."""
        sql = ("INSERT INTO memory_lifecycle (memory_id, user_id, tier_since, hits_base, "
               "window_start) VALUES (?, ?, ?, ?, ?)")
        return sql + (" ON DUPLICATE KEY UPDATE memory_id = memory_id"
                      if self.store.dialect.mysql else " ON CONFLICT (memory_id) DO NOTHING")

    def set_life(self, user_id: str, memory_id: str, tier_since: str, hits_base: int,
                 window_start: str | None) -> None:
        """Upsert the memory's lifecycle row."""
        sql = self.store.dialect.upsert(
            "memory_lifecycle", ("memory_id", "user_id", "tier_since", "hits_base",
                                 "window_start"), ("memory_id",),
            ("tier_since", "hits_base", "window_start"))
        with self.store.transaction():
            self.store._execute(sql, (memory_id, user_id, tier_since, hits_base, window_start))

    def set_window(self, memory_id: str, hits_base: int, window_start: str) -> None:
        """Re-open the sweeper's hit window."""
        with self.store.transaction():
            self.store._execute("UPDATE memory_lifecycle SET hits_base = ?, window_start = ? "
                                "WHERE memory_id = ?", (hits_base, window_start, memory_id))

    def get_life(self, user_id: str, memory_id: str) -> MemoryLife | None:
        """One memory's lifecycle view."""
        rows = self.store._read(f"{_LIFE_SQL} WHERE m.id = ? AND m.user_id = ?",
                                (memory_id, user_id))
        return _life(rows[0]) if rows else None

    def iter_lives(self, batch: int = 1000) -> Iterator[MemoryLife]:
        """Every memory not archived, keyset-paged by id."""
        after = ""
        while True:
            rows = self.store._read(f"{_LIFE_SQL} WHERE m.id > ? AND m.status <> 'archived' "
                                    "ORDER BY m.id LIMIT ?", (after, batch))
            yield from (_life(r) for r in rows)
            if len(rows) < batch:
                return
            after = str(rows[-1][0])

    # --- changelog (embedded topic) ----------------------------------------------------
    def append_change(self, memory_id: str, user_id: str, payload: dict[str, Any] | None,
                      at: str) -> None:
        """Append one value (None = tombstone) to the embedded changelog."""
        text = None if payload is None else s.dumps(payload)
        with self.store.transaction():
            self.store._execute("INSERT INTO memory_changelog (memory_id, user_id, payload, at) "
                                "VALUES (?, ?, ?, ?)", (memory_id, user_id, text, at))

    def read_changes(self, after_seq: int = 0, limit: int = 10_000) -> list[
            tuple[int, str, str, dict[str, Any] | None]]:
        """(seq, memory_id, user_id, payload or None) in seq order."""
        rows = self.store._read("SELECT seq, memory_id, user_id, payload FROM memory_changelog "
                                "WHERE seq > ? ORDER BY seq LIMIT ?", (after_seq, limit))
        return [(int(q), str(m), str(u), None if p is None else json.loads(p))
                for q, m, u, p in rows]

    # --- archived ranges ---------------------------------------------------------------
    def add_archived(self, user_id: str, thread_id: str, start: int, end: int, key: str) -> None:
        """Record that a range's events live in cold storage under ``key``."""
        sql = self.store.dialect.upsert("archived_ranges", (
            "user_id", "thread_id", "start_idx", "end_idx", "object_key"),
            ("user_id", "thread_id", "start_idx"), ("end_idx", "object_key"))
        with self.store.transaction():
            self.store._execute(sql, (user_id, thread_id, start, end, key))

    def remove_archived(self, user_id: str, thread_id: str, start: int) -> None:
        """Forget an archived range (after a restore)."""
        with self.store.transaction():
            self.store._execute("DELETE FROM archived_ranges WHERE user_id = ? AND thread_id = ? "
                                "AND start_idx = ?", (user_id, thread_id, start))

    def has_archived(self, user_id: str) -> bool:
        """Whether any range of the user lives in cold storage."""
        return bool(self.store._read("SELECT 1 FROM archived_ranges WHERE user_id = ? LIMIT 1",
                                     (user_id,)))

    def archived_overlapping(self, user_id: str, thread_id: str | None, start: int,
                             end: int) -> list[tuple[str, int, int, str]]:
        """(thread_id, start, end, key) of archived ranges overlapping [start, end]
        (every thread of the user when ``thread_id`` is None)."""
        sql = ("SELECT thread_id, start_idx, end_idx, object_key FROM archived_ranges "
               "WHERE user_id = ? AND start_idx <= ? AND end_idx >= ?")
        params: tuple[Any, ...] = (user_id, end, start)
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params += (thread_id,)
        rows = self.store._read(sql + " ORDER BY thread_id, start_idx", params)
        return [(str(t), int(a), int(b), str(k)) for t, a, b, k in rows]

    def delete_raw_range(self, user_id: str, thread_id: str, start: int, end: int) -> int:
        """Drop hot raw events of a range (they were archived)."""
        with self.store.transaction():
            return int(self.store._execute(
                "DELETE FROM raw_events WHERE user_id = ? AND thread_id = ? AND idx >= ? "
                "AND idx <= ?", (user_id, thread_id, start, end)))

    def delete_chunks(self, user_id: str, memory_id: str) -> int:
        """Drop a memory's hot chunk rows (they were archived)."""
        with self.store.transaction():
            return int(self.store._execute(
                "DELETE FROM source_chunks WHERE user_id = ? AND memory_id = ?",
                (user_id, memory_id)))


def _key(value: Any) -> str:
    """A key column as text (MySQL returns VARBINARY columns as bytes)."""
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


def _life(r: Sequence[Any]) -> MemoryLife:
    return MemoryLife(
        memory_id=str(r[0]), user_id=str(r[1]), project_id=r[2], status=str(r[3]),
        tier=str(r[4]), hit_count=int(r[5] or 0), last_used_at=r[6], created_at=str(r[7]),
        tier_since=str(r[8] or r[7]), hits_base=int(r[9] or 0), window_start=r[10])

"""A memory's life: the ``memory_lifecycle`` table (per memory: ``tier_since`` and the
sweeper's hit window) and the memory-row writes the lifecycle makes (metadata notes, the
owner of a tombstone's id, the delete); and ``memory_changelog``, the embedded stand-in
for the compacted ``memory-status`` topic (``payload`` NULL = tombstone), replayed in
``seq`` order.

The ``lives`` and ``changelog`` of :class:`~stores.sql.lifecycle.LifecycleTables`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from breadcrumb.processors.lifecycle import MemoryLife
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import SqlDatabase
from breadcrumb.stores.sql.packed import packer, unpack

_LIFE_SQL = (
    "SELECT m.id, m.user_id, m.project_id, m.status, m.tier, m.hit_count, m.last_used_at, "
    "m.created_at, l.tier_since, l.hits_base, l.window_start FROM agent_memories m "
    "LEFT JOIN memory_lifecycle l ON l.memory_id = m.id"
)


class SqlLives:
    """Lifecycle rows: created once, the window re-opened, read with their memory; and
    the memory-row writes of the lifecycle (``LifeTable``, :mod:`stores.ports.tables`)."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    def ensure_life(self, user_id: str, memory_id: str, since: str) -> None:
        """Create the memory's lifecycle row if missing (one statement: an existing row
        is left as it is)."""
        with self.db.transaction():
            self.db.execute(self.insert_missing_life_sql(),
                                (memory_id, user_id, since, 0, since))

    def insert_missing_life_sql(self) -> str:
        """The statement of :meth:`ensure_life` (one row: memory_id, user_id, tier_since,
        hits_base, window_start; an existing row is left as it is)."""
        sql = ("INSERT INTO memory_lifecycle (memory_id, user_id, tier_since, hits_base, "
               "window_start) VALUES (?, ?, ?, ?, ?)")
        return sql + (" ON DUPLICATE KEY UPDATE memory_id = memory_id"
                      if self.db.dialect.mysql else " ON CONFLICT (memory_id) DO NOTHING")

    def set_life(self, user_id: str, memory_id: str, tier_since: str, hits_base: int,
                 window_start: str | None) -> None:
        """Upsert the memory's lifecycle row."""
        sql = self.db.dialect.upsert(
            "memory_lifecycle", ("memory_id", "user_id", "tier_since", "hits_base",
                                 "window_start"), ("memory_id",),
            ("tier_since", "hits_base", "window_start"))
        with self.db.transaction():
            self.db.execute(sql, (memory_id, user_id, tier_since, hits_base, window_start))

    def set_window(self, memory_id: str, hits_base: int, window_start: str) -> None:
        """Re-open the sweeper's hit window."""
        with self.db.transaction():
            self.db.execute("UPDATE memory_lifecycle SET hits_base = ?, window_start = ? "
                                "WHERE memory_id = ?", (hits_base, window_start, memory_id))

    def get_life(self, user_id: str, memory_id: str) -> MemoryLife | None:
        """One memory's lifecycle view."""
        rows = self.db.read(f"{_LIFE_SQL} WHERE m.id = ? AND m.user_id = ?",
                                (memory_id, user_id))
        return _life(rows[0]) if rows else None

    def iter_lives(self, batch: int = 1000) -> Iterator[MemoryLife]:
        """Every memory not archived, keyset-paged by id."""
        after = ""
        while True:
            rows = self.db.read(f"{_LIFE_SQL} WHERE m.id > ? AND m.status <> 'archived' "
                                    "ORDER BY m.id LIMIT ?", (after, batch))
            yield from (_life(r) for r in rows)
            if len(rows) < batch:
                return
            after = str(rows[-1][0])


    # --- the memory rows the lifecycle writes --------------------------------------------

    def set_metadata(self, user_id: str, memory_id: str, metadata: dict[str, Any]) -> None:
        """Overwrite a memory's metadata JSON."""
        with self.db.transaction():
            self.db.execute("UPDATE agent_memories SET metadata = ? WHERE id = ? "
                            "AND user_id = ?", (packer(self.db.dialect.mysql)(s.dumps(metadata)),
                                                memory_id, user_id))

    def owner_of(self, memory_id: str) -> str | None:
        """The user a memory id belongs to (a tombstone carries only the id)."""
        rows = self.db.read("SELECT user_id FROM agent_memories WHERE id = ?", (memory_id,))
        return str(rows[0][0]) if rows else None

    def delete_memory(self, user_id: str, memory_id: str) -> bool:
        """Remove a memory and everything keyed by it (a tombstone); True if it existed."""
        with self.db.transaction():
            for table, col in (("memory_facts", "memory_id"), ("memory_lifecycle", "memory_id"),
                               ("source_chunks", "memory_id")):
                self.db.execute(f"DELETE FROM {table} WHERE {col} = ? AND user_id = ?",
                                    (memory_id, user_id))
            return bool(self.db.execute(
                "DELETE FROM agent_memories WHERE id = ? AND user_id = ?", (memory_id, user_id)))


class SqlMemoryChangelog:
    """The embedded changelog of memory status values (``MemoryChangelog``,
    :mod:`stores.ports.tables`)."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        self._pack = packer(db.dialect.mysql)  # SQLite: a value's JSON kept compressed

    def append_change(self, memory_id: str, user_id: str, payload: dict[str, Any] | None,
                      at: str) -> None:
        """Append one value (None = tombstone) to the embedded changelog; the memory's
        earlier values leave it (compacted as it is written: the latest value of a key is
        what a compacted topic keeps, and what a replay of it ends with)."""
        text = None if payload is None else self._pack(s.dumps(payload))
        with self.db.transaction():
            self.db.execute("DELETE FROM memory_changelog WHERE user_id = ? AND memory_id = ?",
                            (user_id, memory_id))
            self.db.execute("INSERT INTO memory_changelog (memory_id, user_id, payload, at) "
                                "VALUES (?, ?, ?, ?)", (memory_id, user_id, text, at))

    def read_changes(self, after_seq: int = 0, limit: int = 10_000) -> list[
            tuple[int, str, str, dict[str, Any] | None]]:
        """(seq, memory_id, user_id, payload or None) in seq order."""
        rows = self.db.read("SELECT seq, memory_id, user_id, payload FROM memory_changelog "
                                "WHERE seq > ? ORDER BY seq LIMIT ?", (after_seq, limit))
        return [(int(q), str(m), str(u), None if p is None else json.loads(unpack(p)))
                for q, m, u, p in rows]


def _life(r: Sequence[Any]) -> MemoryLife:
    return MemoryLife(
        memory_id=str(r[0]), user_id=str(r[1]), project_id=r[2], status=str(r[3]),
        tier=str(r[4]), hit_count=int(r[5] or 0), last_used_at=r[6], created_at=str(r[7]),
        tier_since=str(r[8] or r[7]), hits_base=int(r[9] or 0), window_start=r[10])

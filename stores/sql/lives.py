"""The ``memory_lifecycle`` table (per memory: ``tier_since`` and the sweeper's hit
window) and ``memory_changelog``, the embedded stand-in for the compacted
``memory-status`` topic (``payload`` NULL = tombstone), replayed in ``seq`` order.

Part of :class:`~stores.sql.lifecycle.LifecycleTables`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from breadcrumb.processors.lifecycle import MemoryLife
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import StoreTables

_LIFE_SQL = (
    "SELECT m.id, m.user_id, m.project_id, m.status, m.tier, m.hit_count, m.last_used_at, "
    "m.created_at, l.tier_since, l.hits_base, l.window_start FROM agent_memories m "
    "LEFT JOIN memory_lifecycle l ON l.memory_id = m.id"
)


class LivesTables(StoreTables):
    """Lifecycle rows: created once, the window re-opened, read with their memory."""

    def ensure_life(self, user_id: str, memory_id: str, since: str) -> None:
        """Create the memory's lifecycle row if missing (one statement: an existing row
        is left as it is)."""
        with self.store.transaction():
            self.store.db.execute(self.insert_missing_life_sql(),
                                (memory_id, user_id, since, 0, since))

    def insert_missing_life_sql(self) -> str:
        """The statement of :meth:`ensure_life` (one row: memory_id, user_id, tier_since,
        hits_base, window_start; an existing row is left as it is)."""
        sql = ("INSERT INTO memory_lifecycle (memory_id, user_id, tier_since, hits_base, "
               "window_start) VALUES (?, ?, ?, ?, ?)")
        return sql + (" ON DUPLICATE KEY UPDATE memory_id = memory_id"
                      if self.store.db.dialect.mysql else " ON CONFLICT (memory_id) DO NOTHING")

    def set_life(self, user_id: str, memory_id: str, tier_since: str, hits_base: int,
                 window_start: str | None) -> None:
        """Upsert the memory's lifecycle row."""
        sql = self.store.db.dialect.upsert(
            "memory_lifecycle", ("memory_id", "user_id", "tier_since", "hits_base",
                                 "window_start"), ("memory_id",),
            ("tier_since", "hits_base", "window_start"))
        with self.store.transaction():
            self.store.db.execute(sql, (memory_id, user_id, tier_since, hits_base, window_start))

    def set_window(self, memory_id: str, hits_base: int, window_start: str) -> None:
        """Re-open the sweeper's hit window."""
        with self.store.transaction():
            self.store.db.execute("UPDATE memory_lifecycle SET hits_base = ?, window_start = ? "
                                "WHERE memory_id = ?", (hits_base, window_start, memory_id))

    def get_life(self, user_id: str, memory_id: str) -> MemoryLife | None:
        """One memory's lifecycle view."""
        rows = self.store.db.read(f"{_LIFE_SQL} WHERE m.id = ? AND m.user_id = ?",
                                (memory_id, user_id))
        return _life(rows[0]) if rows else None

    def iter_lives(self, batch: int = 1000) -> Iterator[MemoryLife]:
        """Every memory not archived, keyset-paged by id."""
        after = ""
        while True:
            rows = self.store.db.read(f"{_LIFE_SQL} WHERE m.id > ? AND m.status <> 'archived' "
                                    "ORDER BY m.id LIMIT ?", (after, batch))
            yield from (_life(r) for r in rows)
            if len(rows) < batch:
                return
            after = str(rows[-1][0])


class ChangelogTables(StoreTables):
    """The embedded changelog of memory status values."""

    def append_change(self, memory_id: str, user_id: str, payload: dict[str, Any] | None,
                      at: str) -> None:
        """Append one value (None = tombstone) to the embedded changelog."""
        text = None if payload is None else s.dumps(payload)
        with self.store.transaction():
            self.store.db.execute("INSERT INTO memory_changelog (memory_id, user_id, payload, at) "
                                "VALUES (?, ?, ?, ?)", (memory_id, user_id, text, at))

    def read_changes(self, after_seq: int = 0, limit: int = 10_000) -> list[
            tuple[int, str, str, dict[str, Any] | None]]:
        """(seq, memory_id, user_id, payload or None) in seq order."""
        rows = self.store.db.read("SELECT seq, memory_id, user_id, payload FROM memory_changelog "
                                "WHERE seq > ? ORDER BY seq LIMIT ?", (after_seq, limit))
        return [(int(q), str(m), str(u), None if p is None else json.loads(p))
                for q, m, u, p in rows]


def _life(r: Sequence[Any]) -> MemoryLife:
    return MemoryLife(
        memory_id=str(r[0]), user_id=str(r[1]), project_id=r[2], status=str(r[3]),
        tier=str(r[4]), hit_count=int(r[5] or 0), last_used_at=r[6], created_at=str(r[7]),
        tier_since=str(r[8] or r[7]), hits_base=int(r[9] or 0), window_start=r[10])

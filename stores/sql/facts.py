"""The ``memory_facts`` table: (user_id, fact_key) -> memory_id, value, ts, state finds
the older memories of a user that hold the same fact key (``state`` = current |
superseded).

The ``facts`` of :class:`~stores.sql.lifecycle.LifecycleTables`.
"""

from __future__ import annotations

from collections.abc import Sequence

from breadcrumb.processors.supersession import FactRow
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import SqlDatabase, id_text

FACT_COLUMNS = ("memory_id", "fact_key", "user_id", "value", "ts", "state")
MAX_KEY_BYTES = 500  # fact keys longer than this are not tracked (VARBINARY(512) column)


class SqlFacts:
    """A memory's facts (``FactTable``, :mod:`stores.ports.tables`)."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

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
        with self.db.transaction():
            if held is None:
                held = [id_text(k) for (k,) in self.db.fetch(
                    "SELECT fact_key FROM memory_facts WHERE memory_id = ?", (memory_id,))]
            for key in held:
                if key not in keep:
                    self.db.execute("DELETE FROM memory_facts WHERE memory_id = ? AND "
                                        "fact_key = ?", (memory_id, key))
            if rows:
                self.db.execute_many(self.db.dialect.upsert(
                    "memory_facts", FACT_COLUMNS, ("memory_id", "fact_key"), FACT_COLUMNS[2:]),
                    rows)
        return list(dict.fromkeys(r[1] for r in rows))

    def fact_keys_of(self, memory_ids: Sequence[str]) -> dict[str, list[str]]:
        """Issue 14: the fact keys each memory holds (every id present, one read per 500)."""
        ids = list(dict.fromkeys(memory_ids))
        out: dict[str, list[str]] = {m: [] for m in ids}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            for mid, key in self.db.read(
                    "SELECT memory_id, fact_key FROM memory_facts WHERE memory_id IN "
                    f"({s.marks(len(part))})", part):
                out[id_text(mid)].append(id_text(key))
        return out

    def current_facts(self, user_id: str, keys: Sequence[str]) -> list[FactRow]:
        """Current facts of these keys held by the user's active or conflicted memories."""
        if not keys:
            return []
        rows = self.db.read(
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
        rows = self.db.read(
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
        rows = self.db.read(
            "SELECT memory_id, fact_key, value, ts FROM memory_facts WHERE user_id = ? "
            f"AND fact_key IN ({s.marks(len(keys))})", (user_id, *keys))
        return [FactRow(str(m), str(k), str(v), str(t)) for m, k, v, t in rows]

    def facts_of(self, memory_id: str, state: str = "current") -> list[FactRow]:
        """One memory's facts in a state."""
        rows = self.db.read("SELECT memory_id, fact_key, value, ts FROM memory_facts "
                                "WHERE memory_id = ? AND state = ?", (memory_id, state))
        return [FactRow(str(m), str(k), str(v), str(t)) for m, k, v, t in rows]

    def fact_states_of(self, memory_id: str) -> list[tuple[str, str]]:
        """(key, state) of every fact of one memory (``facts_of`` of each state at once)."""
        rows = self.db.read("SELECT fact_key, state FROM memory_facts WHERE memory_id = ?",
                                (memory_id,))
        return [(id_text(k), str(st)) for k, st in rows]

    def mark_fact(self, memory_id: str, key: str, state: str) -> None:
        """Set one fact's state."""
        with self.db.transaction():
            self.db.execute("UPDATE memory_facts SET state = ? WHERE memory_id = ? "
                                "AND fact_key = ?", (state, memory_id, key))



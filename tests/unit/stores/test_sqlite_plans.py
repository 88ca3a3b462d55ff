"""Issue 49: the statements a derivation batch runs on every memory stay off the tenant-wide
index ranges, whose length grows with the data. At a million events (250,000 memories and
700 superseded rows per fact key a tenant) a batch's status write of 8 memories scanned the
tenant's (user_id, status) range (35 ms) and a key's current facts read its whole history;
ingest fell to 190 events/s. The query plans are what changes with the data, so they are
what is checked (SQLite's plans do not depend on the table's size without ANALYZE)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from breadcrumb.processors.supersession import FactRow
from breadcrumb.stores.sql.facts_batch import BatchedLifecycleTables
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.topics.records import MemoryStatusChange, Observation, SourceRange

IDS = [f"m{n}" for n in range(8)]


def _plan(store: SqliteStore, sql: str, params: Sequence[Any]) -> str:
    return " | ".join(str(r[-1]) for r in store.db.fetch(f"EXPLAIN QUERY PLAN {sql}", params))


def _stored(store: SqliteStore) -> None:
    store.lifecycle_tables.open()
    with store.transaction():
        for mid in IDS:
            store.memories.upsert_memory(Observation(mid, "u", None, f"summary {mid}",
                                                     SourceRange("t", 0, 1), (), (), "", 0.5,
                                                     "2025-01-01T00:00:00Z"))


def test_a_batchs_status_and_metadata_writes_go_by_primary_key(
        store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    _stored(store)
    seen: list[tuple[str, Sequence[Any]]] = []
    execute = store.db.execute

    def spy(sql: str, params: Sequence[Any] = ()) -> int:
        seen.append((sql, params))
        return execute(sql, params)

    monkeypatch.setattr(store.db, "execute", spy)
    batch = BatchedLifecycleTables(store.lifecycle_tables, store,
                                   defer_rows=True)
    with store.transaction():
        for mid in IDS:
            batch.set_metadata("u", mid, {"merged_ranges": {}})
            change = MemoryStatusChange(mid, "u", "superseded", "provisional",
                                        "2025-02-01T00:00:00Z", "pipeline", "test")
            batch.apply_status_change(change, ("superseded", "provisional",
                                               "2025-02-01T00:00:00Z", None, None))
        batch.flush()
    updates = [(q, p) for q, p in seen if q.startswith("UPDATE agent_memories")]
    assert len(updates) == 2, [q for q, _ in seen]
    for sql, params in updates:
        plan = _plan(store, sql, params)
        assert "sqlite_autoindex_agent_memories_1 (id=?)" in plan, plan
        assert "user_id_status" not in plan, plan
    assert {m.status for m in store.memories.get_memories("u", IDS)} == {"superseded"}
    assert all(m.metadata == {"merged_ranges": {}}
               for m in store.memories.get_memories("u", IDS))


def test_a_keys_current_facts_are_read_without_its_history(store: SqliteStore) -> None:
    _stored(store)
    facts = store.lifecycle_tables.facts
    with store.transaction():
        for mid in IDS:
            facts.replace_facts("u", mid, [FactRow(mid, "env:A", mid, "2025-01-01T00:00:00Z"),
                                           FactRow(mid, "env:B", "1", "2025-01-01T00:00:00Z")])
    keys = ("env:A", "env:B")
    current = ("SELECT f.memory_id, f.fact_key, f.value, f.ts, m.status FROM memory_facts f "
               "JOIN agent_memories m ON m.id = f.memory_id AND m.user_id = f.user_id "
               "WHERE f.user_id = ? AND f.fact_key IN (?, ?) AND f.state = 'current'")
    plan = _plan(store, current, ("u", *keys))  # the statement of current_facts_any_status
    assert "COVERING INDEX cover_memory_facts" in plan and "state=?" in plan, plan
    history = "SELECT memory_id, fact_key, value, ts FROM memory_facts WHERE user_id = ? " \
              "AND fact_key IN (?, ?)"  # facts_in_any_state's: the key's rows, not the table
    assert "COVERING INDEX cover_memory_facts" in _plan(store, history, ("u", *keys))
    assert len(facts.facts_in_any_state("u", list(keys))) == 16
    assert len(facts.current_facts_any_status("u", list(keys))) >= 1

"""Issue 49: the statements a derivation batch runs on every memory stay off the tenant-wide
index ranges, whose length grows with the data. At a million events (250,000 memories and
700 superseded rows per fact key a tenant) a batch's status write of 8 memories scanned the
tenant's (user_id, status) range (35 ms) and a key's current facts read its whole history;
ingest fell to 190 events/s. The query plans are what changes with the data, so they are
what is checked (SQLite's plans do not depend on the table's size without ANALYZE)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
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


def _statements(store: SqliteStore, monkeypatch: pytest.MonkeyPatch, method: str
                ) -> list[tuple[str, Sequence[Any]]]:
    """The (statement, parameters) the store's ``db.<method>`` runs from now on."""
    seen: list[tuple[str, Sequence[Any]]] = []
    real = getattr(store.db, method)

    def spy(sql: str, params: Sequence[Any] = ()) -> Any:
        seen.append((sql, params))
        return real(sql, params)

    monkeypatch.setattr(store.db, method, spy)
    return seen


def test_a_batchs_status_and_metadata_writes_go_by_primary_key(
        store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    _stored(store)
    seen = _statements(store, monkeypatch, "execute")
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


def test_a_keys_current_facts_are_read_without_its_history(
        store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    _stored(store)
    facts = store.lifecycle_tables.facts
    with store.transaction():
        for mid in IDS:
            facts.replace_facts("u", mid, [FactRow(mid, "env:A", mid, "2025-01-01T00:00:00Z"),
                                           FactRow(mid, "env:B", "1", "2025-01-01T00:00:00Z")])
    keys = ["env:A", "env:B"]
    seen = _statements(store, monkeypatch, "read")
    assert len(facts.current_facts_any_status("u", keys)) >= 1
    assert len(facts.facts_in_any_state("u", keys)) == 16
    (current, current_params), (history, history_params) = seen
    plan = _plan(store, current, current_params)  # the current rows: equality on state
    assert "COVERING INDEX cover_memory_facts" in plan and "state=?" in plan, plan
    # every row of the keys (replicas): the key's rows of the index, not the table
    assert "COVERING INDEX cover_memory_facts" in _plan(store, history, history_params)


def test_the_log_indexes_only_its_entries_not_processed_yet(
        store: SqliteStore) -> None:
    """Schema 6: the pending reads go by a partial index that holds no processed entry (a
    (processed, seq) index held every entry of the log); a schema-5 file drops the old one."""
    log = store.log
    assert log.append_log([("u", f"e{n}", "u/t", "{}") for n in range(6)]) == [True] * 6
    log.mark_processed_many([1, 2, 4])
    assert [seq for seq, _ in log.read_log(0, 10)] == [3, 5, 6]
    assert log.count_unprocessed() == 3 and log.max_processed_seq() == 4
    for sql, params in (("SELECT seq, payload FROM event_log WHERE processed = 0 AND seq > ? "
                         "ORDER BY seq LIMIT ?", (0, 10)),
                        ("SELECT COUNT(*) FROM event_log WHERE processed = 0", ())):
        assert "pending_event_log_seq" in _plan(store, sql, params)
    names = {r[0] for r in store.db.fetch("SELECT name FROM sqlite_schema WHERE type = 'index' "
                                          "AND tbl_name = 'event_log'")}
    assert "ix_event_log_processed_seq" not in names


def test_a_schema_5_log_loses_its_full_index_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with SqliteStore(path) as old:
        with old.db.transaction():
            old.db.execute("CREATE INDEX ix_event_log_processed_seq ON event_log (processed, seq)")
            old.db.execute("UPDATE schema_meta SET value = 5 WHERE name = 'version'")
        old.log.append_log([("u", "e1", "u/t", "{}")])
    with SqliteStore(path) as again:
        names = {r[0] for r in again.db.fetch("SELECT name FROM sqlite_schema WHERE "
                                              "type = 'index' AND tbl_name = 'event_log'")}
        assert "ix_event_log_processed_seq" not in names and "pending_event_log_seq" in names
        assert [seq for seq, _ in again.log.read_log(0, 10)] == [1]

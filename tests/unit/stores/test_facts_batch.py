"""``BatchedLifecycleTables`` (issue 14): a batch's lifecycle rows and metadata are read
back as if written at once, and written at its end with a few statements."""

from __future__ import annotations

from pathlib import Path

from breadcrumb.stores.ports.tables import LifeTable
from breadcrumb.stores.sql.facts_batch import BatchedLifecycleTables
from breadcrumb.stores.sql.lifecycle import LifecycleTables
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.topics.records import Observation, SourceRange


def _store(tmp_path: Path) -> SqliteStore:
    store = SqliteStore(tmp_path / "s.sqlite3")
    store.open()
    store.lifecycle_tables.open()
    for mid in ("m1", "m2", "m3"):
        store.memories.upsert_memory(Observation(mid, "u", None, f"summary {mid}",
                                                 SourceRange("t", 0, 1), (), (), "", 0.5,
                                                 "2025-01-01T00:00:00Z"))
    store.lifecycle_tables.lives.ensure_life("u", "m3", "2025-01-02T00:00:00Z")  # has a row
    return store


def _batch(store: SqliteStore, **kw: object) -> BatchedLifecycleTables:
    return BatchedLifecycleTables(store.lifecycle_tables, store, defer_rows=True,
                                  **kw)  # type: ignore[arg-type]


def _lives(lives: LifeTable) -> dict[str, tuple[str, int, str | None]]:
    return {m: (life.tier_since, life.hits_base, life.window_start)
            for m in ("m1", "m2", "m3") if (life := lives.get_life("u", m)) is not None}


def test_kept_writes_read_back_as_written_and_land_at_the_end(tmp_path: Path) -> None:
    direct, batched = _store(tmp_path / "a"), _store(tmp_path / "b")
    batch = _batch(batched)
    batch.prefetch(["m1", "m2", "m3"])
    steps = [("ensure_life", ("u", "m1", "2025-02-01T00:00:00Z")),
             ("ensure_life", ("u", "m3", "2025-02-01T00:00:00Z")),  # has a row: unchanged
             ("set_life", ("u", "m2", "2025-02-02T00:00:00Z", 4, None)),
             ("ensure_life", ("u", "m2", "2025-02-03T00:00:00Z")),  # m2 has one by now
             ("ensure_life", ("u", "m1", "2025-02-04T00:00:00Z")),  # the first one counts
             ("set_metadata", ("u", "m1", {"merged_ranges": {"m2": {}}})),
             ("set_metadata", ("u", "m1", {"merged_ranges": {"m2": {}, "m3": {}}}))]
    lives = direct.lifecycle_tables.lives
    for name, args in steps:
        getattr(lives, name)(*args)
        getattr(batch, name)(*args)
        assert _lives(batch) == _lives(lives)  # read back as if written at once
    assert _lives(batched.lifecycle_tables.lives) != _lives(lives)  # ... but not written yet
    batch.flush()
    assert _lives(batched.lifecycle_tables.lives) == _lives(lives)
    kept = batched.memories.get_memory("u", "m1")
    assert kept == direct.memories.get_memory("u", "m1")
    assert kept is not None and kept.metadata == {"merged_ranges": {"m2": {}, "m3": {}}}


def test_a_tombstone_drops_what_was_kept(tmp_path: Path) -> None:
    store = _store(tmp_path)
    batch = _batch(store)
    batch.prefetch(["m1"])
    batch.ensure_life("u", "m1", "2025-02-01T00:00:00Z")
    batch.set_metadata("u", "m1", {"x": 1})
    assert batch.delete_memory("u", "m1")
    batch.flush()
    assert store.lifecycle_tables.lives.get_life("u", "m1") is None
    assert store.db.read("SELECT COUNT(*) FROM memory_lifecycle WHERE memory_id = 'm1'") \
        == [(0,)]


def test_a_kept_row_answers_get_life_without_a_read(tmp_path: Path) -> None:
    direct, batched = _store(tmp_path / "a"), _store(tmp_path / "b")
    rows = {m: batched.memories.get_memory_row("u", m) for m in ("m1", "m2", "m3")}
    batch = _batch(batched, kept_row=lambda _user, mid: rows.get(mid))
    batch.prefetch(["m1", "m2", "m3"])
    lives = direct.lifecycle_tables.lives
    for tables in (lives, batch):
        tables.ensure_life("u", "m1", "2025-02-01T00:00:00Z")
        tables.set_life("u", "m2", "2025-02-02T00:00:00Z", 4, "2025-02-02T00:00:00Z")
    reads: list[str] = []
    inner = batched.db.read
    batched.db.read = lambda sql, params=(): reads.append(sql) or inner(sql, params)  # type: ignore[method-assign]
    assert _lives(batch) == _lives(lives)
    assert [batch.get_life("u", m) for m in ("m1", "m2", "m3")] == \
        [lives.get_life("u", m) for m in ("m1", "m2", "m3")]
    assert reads == []


def test_fact_holders_are_read_once_and_kept_as_facts_are_replaced(tmp_path: Path) -> None:
    from breadcrumb.processors.supersession import FactRow

    direct, batched = _store(tmp_path / "a"), _store(tmp_path / "b")
    batch = _batch(batched)
    facts = direct.lifecycle_tables.facts

    def holders(tables: object) -> set[FactRow]:
        return set(tables.facts_in_any_state("u", ["env:A", "env:B"]))  # type: ignore[attr-defined]

    steps = [("m1", [FactRow("m1", "env:A", "1", "t1"), FactRow("m1", "env:B", "x", "t1")]),
             ("m2", [FactRow("m2", "env:A", "2", "t2")]),
             ("m1", [FactRow("m1", "env:A", "3", "t3")]),  # m1 no longer holds env:B
             ("m3", [FactRow("m3", "k" * 600, "long key: not tracked", "t4")])]
    assert holders(batch) == holders(facts) == set()
    for mid, rows in steps:
        assert facts.replace_facts("u", mid, rows) == batch.replace_facts("u", mid, rows)
        assert holders(batch) == holders(facts)
    assert holders(batch) == {FactRow("m1", "env:A", "3", "t3"), FactRow("m2", "env:A", "2", "t2")}
    batch.delete_memory("u", "m2")
    assert holders(batch) == {FactRow("m1", "env:A", "3", "t3")} == set(
        batched.lifecycle_tables.facts.facts_in_any_state("u", ["env:A", "env:B"]))


def _memory_state(store: SqliteStore) -> list[tuple[object, ...]]:
    return store.db.read("SELECT id, status, tier, updated_at, superseded_by, "
                         "supersedes_memory_id FROM agent_memories ORDER BY id")


def test_status_changes_land_at_the_end_and_are_seen_before(tmp_path: Path) -> None:
    """A deferred ``apply_status_change`` is what ``current_facts`` filters on and what
    ``get_life`` gives before it is written; the end writes each memory's last values."""
    from breadcrumb.processors.supersession import FactRow
    from breadcrumb.stores.sql.facts_batch import STATUS_COLUMNS
    from breadcrumb.topics.records import MemoryStatusChange

    direct, batched = _store(tmp_path / "a"), _store(tmp_path / "b")
    batch = _batch(batched)
    tables: LifecycleTables = direct.lifecycle_tables
    for facts in (tables.facts, batch):
        for mid in ("m1", "m2", "m3"):
            facts.replace_facts("u", mid, [FactRow(mid, "env:A", mid, "t")])
    changes = [MemoryStatusChange("m1", "u", "superseded", "active", "t1", "p", "r",
                                  superseded_by="m2"),
               MemoryStatusChange("m2", "u", "conflicted", "active", "t2", "p", "r",
                                  supersedes_memory_id="m1"),
               MemoryStatusChange("m2", "u", "active", "confirmed", "t3", "p", "r")]
    row = {str(r[0]): dict(zip(STATUS_COLUMNS, r[1:], strict=True))
           for r in _memory_state(batched)}
    for change in changes:
        direct.memories.apply_status_change(change)
        old = row[change.memory_id]
        row[change.memory_id] = {
            "status": change.status, "tier": change.tier, "updated_at": change.at,
            "superseded_by": change.superseded_by or old["superseded_by"],
            "supersedes_memory_id": change.supersedes_memory_id or old["supersedes_memory_id"]}
        batch.apply_status_change(change, [row[change.memory_id][c] for c in STATUS_COLUMNS])
        assert sorted(batch.current_facts("u", ["env:A"]), key=str) == sorted(
            tables.facts.current_facts("u", ["env:A"]), key=str)
        assert batch.get_life("u", "m2") == tables.lives.get_life("u", "m2")
    assert _memory_state(batched) != _memory_state(direct)  # not written yet
    batch.flush_memory("u", "m1")  # one memory at once (before it is read from SQL)
    assert _memory_state(batched)[0] == _memory_state(direct)[0]
    batch.flush()
    assert _memory_state(batched) == _memory_state(direct)

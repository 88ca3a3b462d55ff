"""``BatchFacts`` (issue 14) on the real MariaDB: a batch's ``memory_facts`` reads and
writes, kept and written at its end, read back and land as the direct statements do."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from breadcrumb.processors.supersession import FactRow
from breadcrumb.settings import Settings
from breadcrumb.stores.sql.facts_batch import STATUS_COLUMNS, BatchedLifecycleTables
from breadcrumb.stores.sql.mysql.store import MySqlStore
from breadcrumb.topics.records import MemoryStatusChange, Observation, SourceRange
from tests.integration.conftest import drop_database, fresh_database

pytestmark = pytest.mark.integration
MEMORIES = [f"m{n}" for n in range(8)]
KEYS = [f"env:K{n}" for n in range(5)]


@pytest.fixture()
def pair() -> Iterator[list[MySqlStore]]:
    out, names = [], []
    for _ in range(2):
        name = fresh_database(uuid.uuid4().hex[:8])
        settings = Settings(mysql_database=name)
        store = MySqlStore(port=settings.mysql_port, user="breadcrumb", password="breadcrumb",
                           database=name)
        store.open()
        store.lifecycle_tables.open()
        for mid in MEMORIES:
            store.memories.upsert_memory(Observation(mid, "u", None, f"summary {mid}",
                                            SourceRange("t", 0, 1), (), (), "", 0.5,
                                            "2025-01-01T00:00:00Z"))
        out.append(store)
        names.append(name)
    yield out
    for store, name in zip(out, names, strict=True):
        store.close()
        drop_database(name)


def _facts(store: MySqlStore) -> list[tuple[Any, ...]]:
    return sorted(store.db.read("SELECT memory_id, fact_key, user_id, value, ts, state "
                                "FROM memory_facts"))


def _seed(store: MySqlStore, rng: random.Random) -> None:
    for mid in MEMORIES[:5]:
        store.lifecycle_tables.facts.replace_facts(
            "u", mid, [FactRow(mid, k, f"v{rng.randrange(3)}", "t0") for k in rng.sample(KEYS, 2)])


@pytest.mark.parametrize("seed", range(6))
def test_a_batch_reads_and_writes_facts_as_the_statements_do(
        pair: list[MySqlStore], seed: int) -> None:
    direct, batched = pair
    _seed(direct, random.Random(seed))
    _seed(batched, random.Random(seed))
    rng = random.Random(100 + seed)
    held = batched.lifecycle_tables.facts.fact_keys_of(MEMORIES)
    rows = {m: batched.memories.get_memory_row("u", m) for m in MEMORIES}
    facts = direct.lifecycle_tables.facts
    with batched.transaction():
        batch = BatchedLifecycleTables(batched.lifecycle_tables, batched, defer_rows=True,
                                       kept_row=lambda _u, m: rows[m])
        assert batch.model is not None  # MySQL: the facts are kept (stores.sql.facts_model)
        for _step in range(40):
            _step_both(direct, batch, rng, held, rows)
            keys = rng.sample(KEYS, 3)
            # the SQL has no ORDER BY: its order is the plan's (on a table this small the
            # primary key's; at scale the (user_id, fact_key) index's, which the batch gives)
            assert sorted(batch.current_facts("u", keys), key=str) == sorted(
                facts.current_facts("u", keys), key=str)
            assert sorted(batch.facts_in_any_state("u", keys), key=str) == sorted(
                facts.facts_in_any_state("u", keys), key=str)
            mid = rng.choice(MEMORIES)
            assert batch.fact_states_of(mid) == facts.fact_states_of(mid)
        assert _facts(batched) != _facts(direct)  # not written yet
        batch.flush()
    assert _facts(batched) == _facts(direct)


def _step_both(direct: MySqlStore, batch: BatchedLifecycleTables, rng: random.Random,
               held: dict[str, list[str]], rows: dict[str, Any]) -> None:
    mid, kind = rng.choice(MEMORIES), rng.randrange(10)
    if kind < 5:  # a memory (re-)derived: 0-3 facts, sometimes a repeated key
        facts = [FactRow(mid, k, f"v{rng.randrange(3)}", f"t{rng.randrange(4)}")
                 for k in rng.choices(KEYS, k=rng.randrange(4))]
        given = held.get(mid) if rng.random() < 0.5 else None
        kept = batch.replace_facts("u", mid, facts, given)
        assert kept == direct.lifecycle_tables.facts.replace_facts("u", mid, facts, given)
        held[mid] = kept
    elif kind < 8:
        key = rng.choice(KEYS)
        batch.mark_fact(mid, key, "superseded")
        direct.lifecycle_tables.facts.mark_fact(mid, key, "superseded")
    else:  # a status change: its memory's current facts stop or start counting
        status = rng.choice(("active", "superseded", "conflicted"))
        change = MemoryStatusChange(mid, "u", status, "active", "t9", "p", "r")
        direct.memories.apply_status_change(change)
        rows[mid] = {**rows[mid], "status": status, "tier": "active", "updated_at": "t9"}
        batch.apply_status_change(change, [rows[mid][c] for c in STATUS_COLUMNS])

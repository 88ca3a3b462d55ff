"""The browse and forget SQL (issue 26) on both engines: SQLite and the real MariaDB.
Ids with LIKE wildcards, text with ``%`` and ``_``, keyset pages, dead letters of the
processors (no user_id column), tombstones (MySQL: in the control database)."""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.stores.ports.tables import Scope
from breadcrumb.stores.sql import browse as sql_browse
from breadcrumb.stores.sql.mysql.store import MySqlStore
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.topics.records import DeadLetter
from tests.integration.conftest import drop_database, fresh_database
from tests.unit.stores.test_sqlite_store import ev, obs

pytestmark = pytest.mark.integration
USER = "u_x%"  # LIKE wildcards in an id


@pytest.fixture(params=["sqlite", "mysql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        made: Any = SqliteStore(tmp_path / "s.sqlite3")
        database = None
    else:
        database = fresh_database(uuid.uuid4().hex[:8])
        made = MySqlStore(host=os.environ.get("BREADCRUMB_MYSQL_HOST", "127.0.0.1"),
                          port=int(os.environ.get("BREADCRUMB_MYSQL_PORT", "3306")),
                          user="breadcrumb", password="breadcrumb", database=database)
    made.open()
    made.lifecycle_tables.open()
    try:
        yield made
    finally:
        made.close()
        if database is not None:
            drop_database(database)


def _fill(store: Any) -> list[str]:
    for thread, n in (("t-a", 3), ("t-b", 2)):
        for i in range(n):
            store.events.put_event(ev(USER, thread, i))
    store.events.put_event(ev("uzx", "t-a", 0))  # matches u_x% as a LIKE pattern, not as an id
    ids = []
    for k in range(5):
        o = obs(f"m{k}", USER, summary="Hello 100%_ Done" if k == 3 else f"summary {k}")
        o = dataclasses.replace(o, created_at=f"2026-01-0{k + 1}T00:00:00Z", importance=k / 10,
                                tags=("a.b", f"n{k}"),
                                source_range=dataclasses.replace(o.source_range,
                                                                 thread_id="t-a" if k < 3
                                                                 else "t-b"))
        store.memories.upsert_memory(o)
        ids.append(o.id)
    store.memories.upsert_memory(obs("other", "uzx"))
    return ids


def _ids(store: Any, **kw: Any) -> list[str]:
    flt = sql_browse.MemoryFilter(USER, **kw)
    rows, _ = store.browse.list_memories(flt, limit=50)
    return [r["id"] for r in rows]


def test_list_filters_and_pages(store: Any) -> None:
    ids = _fill(store)
    assert _ids(store) == list(reversed(ids))
    assert _ids(store, text="100%_") == ["m3"] and _ids(store, text="hello 100") == ["m3"]
    assert _ids(store, text="0%x") == [] and _ids(store, text="summary _") == []
    assert _ids(store, tag="a.b") == list(reversed(ids)) and _ids(store, tag="a") == []
    assert _ids(store, thread_id="t-b") == ["m4", "m3"]
    seen, cursor = [], None
    for _ in range(10):
        rows, cursor = store.browse.list_memories(sql_browse.MemoryFilter(USER),
                                                  "importance", 2, cursor)
        seen += [r["id"] for r in rows]
        if cursor is None:
            break
    assert seen == ["m4", "m3", "m2", "m1", "m0"]
    threads, _ = store.browse.list_threads(USER)
    assert [(t["thread_id"], t["event_count"]) for t in threads] == [("t-a", 3), ("t-b", 2)]
    assert [v["id"] for v in store.browse.versions(USER, "m1")] == ["m1"]


def test_dead_letters_by_column_or_payload(store: Any) -> None:
    letters = store.dead_letters
    letters.put_dead_letter(DeadLetter("bad ts", '{"user_id":"u_x%","ts":"x"}', "2026-01-01",
                                       user_id=USER))
    letters.put_dead_letter(DeadLetter("failed", '{"user_id":"u_x%","thread_id":"t-a"}',
                                       "2026-01-02", source="processor"), key="log:7")
    letters.put_dead_letter(DeadLetter("failed", '{"user_id":"uzx"}', "2026-01-03",
                                       source="processor"), key="log:8")
    mine = store.browse.list_dead_letters(USER)
    assert [(x["reason"], x["position"]) for x in mine] == [("failed", "log:7"),
                                                            ("bad ts", None)]
    assert len(store.browse.list_dead_letters(None)) == 3


def test_forget_a_thread_and_its_tombstone(store: Any) -> None:
    _fill(store)
    plan = store.erasure.plan(Scope("thread", USER, thread_id="t-a"))
    assert plan is not None and sorted(plan.memory_ids) == ["m0", "m1", "m2"]
    store.tombstones.write(plan, "2026-02-01T00:00:00Z", "test")
    counts = store.erasure.erase(plan)
    assert counts["raw_events"] == 3 and counts["agent_memories"] == 3
    assert _ids(store) == ["m4", "m3"]
    assert store.events.get_range("uzx", "t-a", 0, 0)  # the look-alike tenant keeps its events
    keys = [(USER, "t-a", "e1", "2020-01-01T00:00:00Z"), (USER, "t-b", "e2", "2020-01-01Z"),
            ("uzx", "t-a", "e3", "2020-01-01T00:00:00Z")]
    assert store.tombstones.erased_positions(keys) == {0}
    memory = store.erasure.plan(Scope("memory", USER, memory_id="m4"))
    assert memory is not None and sorted(memory.event_ids) == [f"{USER}-t-b-0",
                                                              f"{USER}-t-b-1"]
    store.tombstones.write(memory, "2026-02-02T00:00:00Z", "test")
    store.erasure.erase(memory)
    assert store.tombstones.is_erased(USER, "t-b", f"{USER}-t-b-1", "2020-01-01T00:00:00Z")
    assert not store.tombstones.is_erased(USER, "t-b", "new-event", "2020-01-01T00:00:00Z")
    tenant = store.erasure.plan(Scope("tenant", "uzx"))
    assert tenant is not None
    store.tombstones.write(tenant, "2026-03-01T00:00:00Z", "test")
    store.erasure.erase(tenant)
    assert store.tombstones.is_erased("uzx", "t-z", "old", "2026-02-28T23:59:59Z")
    assert not store.tombstones.is_erased("uzx", "t-z", "new", "2026-03-01T00:00:01Z")
    assert store.memories.get_memory("uzx", "other") is None

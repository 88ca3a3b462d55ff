"""The explorer's SQL (issue 47, the store's ``explore``: ``stores/sql/explore.py``) on both
engines: SQLite and the real MariaDB of cluster mode. Tenants, a thread's header and title,
threads by last event in keyset pages (ties on the time included), fact keys found by text
(case folded, wildcards taken literally), a fact's rows oldest first; ids that differ only
in case or by a LIKE wildcard stay apart."""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.processors.supersession import FactRow
from breadcrumb.stores.sql.explore import TITLE_CHARS
from breadcrumb.stores.sql.mysql.store import MySqlStore
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.topics.records import MemoryStatusChange, SourceRange
from tests.integration.conftest import drop_database, fresh_database
from tests.unit.stores.test_sqlite_store import ev, obs

pytestmark = pytest.mark.integration
USER = "u_x%"  # LIKE wildcards in an id
OTHER = "U_X%"  # differs only in case: another tenant on both engines


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


def _event(user: str, thread: str, index: int, ts: str, content: str = "hello",
           role: str = "assistant", kind: str = "message") -> Any:
    return dataclasses.replace(ev(user, thread, index, content=content), ts=ts, role=role,
                               kind=kind, agent_id="agent-1", project_id="shop")


def _threads(store: Any) -> None:
    """Four threads of USER: two end at the same second (a tie the keyset must break)."""
    day = "2026-11-0{}T10:00:0{}Z"
    for i in range(3):
        store.events.put_event(_event(USER, "t-a", i, day.format(1, i), role="user" if i == 1
                               else "assistant", content=f"Étape {i}:  set\nDB_PORT"))
    store.events.put_event(_event(USER, "t-b", 0, day.format(2, 0), content="b only"))
    store.events.put_event(_event(USER, "t-c", 0, day.format(2, 0), kind="file_edit",
                           content="+X=1"))
    store.events.put_event(_event(USER, "t-c", 1, day.format(2, 0), content="x" * 400))
    store.events.put_event(_event(USER, "T-A", 0, day.format(3, 0), content="upper case thread"))
    store.events.put_event(_event(OTHER, "t-a", 0, day.format(9, 0), content="other tenant"))


def test_tenants_and_a_threads_header(store: Any) -> None:
    explore = store.explore
    _threads(store)
    store.memories.upsert_memory(obs("m-only", "mem-only"))
    tenants = explore.list_tenants()
    assert [t["tenant"] for t in tenants] == [OTHER, USER, "mem-only"]
    assert tenants[1] == {"tenant": USER, "events": 7, "memories": 0,
                          "last_ts": "2026-11-03T10:00:00Z"}
    assert tenants[2] == {"tenant": "mem-only", "events": 0, "memories": 1, "last_ts": None}

    info = explore.thread_info(USER, "t-a")
    assert info == {"agent_id": "agent-1", "project_id": "shop", "event_count": 3,
                    "first_ts": "2026-11-01T10:00:00Z", "last_ts": "2026-11-01T10:00:02Z",
                    "first_index": 0, "last_index": 2, "title": "Étape 1: set DB_PORT"}
    assert explore.thread_info(USER, "T-A")["title"] == "upper case thread"  # type: ignore[index]
    long = explore.thread_info(USER, "t-c")
    assert long is not None and len(long["title"]) == TITLE_CHARS
    assert long["title"].endswith("…")  # the file_edit is no message: the next one titles it
    assert explore.thread_info(USER, "t-%") is None
    assert explore.thread_info("u_x_", "t-a") is None
    assert explore.thread_info(OTHER, "t-a")["title"] == "other tenant"  # type: ignore[index]


def test_threads_by_last_event_in_keyset_pages(store: Any) -> None:
    explore = store.explore
    _threads(store)
    seen, before, pages = [], None, 0
    while True:
        page, before = explore.threads_by_last_event(USER, limit=1, before=before)
        seen += page
        pages += 1
        if before is None:
            break
    assert [t["thread_id"] for t in seen] == ["T-A", "t-c", "t-b", "t-a"]  # tie: id desc
    assert pages == 4
    assert all(t["agent_id"] == "agent-1" and t["project_id"] == "shop" for t in seen)
    assert [t["event_count"] for t in seen] == [1, 2, 1, 3]
    assert seen[3]["title"] == "Étape 1: set DB_PORT" and seen[2]["title"] == "b only"
    whole, nxt = explore.threads_by_last_event(USER, limit=10)
    assert [t["thread_id"] for t in whole] == ["T-A", "t-c", "t-b", "t-a"] and nxt is None
    assert explore.threads_by_last_event("u_x_")[0] == []


def _fact_memories(store: Any) -> None:
    """DB_PORT 5432 → 6432 → 7432 in three threads; db_port (lower case) is another key."""
    facts = store.lifecycle_tables.facts
    said = [("m1", "t-a", "5432", "2026-11-01T10:00:01Z"),
            ("m2", "t-b", "6432", "2026-11-02T10:00:01Z"),
            ("m3", "t-c", "7432", "2026-11-03T10:00:01Z")]
    for n, (mid, thread, value, ts) in enumerate(said):
        store.memories.upsert_memory(obs(mid, USER, summary=f"DB_PORT is {value}", created_at=ts,
                                source_range=SourceRange(thread, 0, 2),
                                supersedes_memory_id=said[n - 1][0] if n else None))
        facts.replace_facts(USER, mid, [FactRow(mid, "env:DB_PORT", value, ts)])
        if n:
            older = said[n - 1][0]
            assert store.memories.apply_status_change(MemoryStatusChange(
                older, USER, "superseded", "confirmed", ts, "lifecycle", "newer value",
                superseded_by=mid))
            facts.mark_fact(older, "env:DB_PORT", "superseded")
    store.memories.upsert_memory(obs("m4", USER, created_at="2026-11-04T00:00:00Z"))
    facts.replace_facts(USER, "m4", [FactRow("m4", "env:db_port", "1", "2026-11-04T00:00:00Z"),
                                      FactRow("m4", "env:A_%B", "x", "2026-11-04T00:00:00Z")])
    store.memories.upsert_memory(obs("o1", OTHER, created_at="2026-11-05T00:00:00Z"))
    facts.replace_facts(OTHER, "o1", [FactRow("o1", "env:DB_PORT", "9", "2026-11-05T00:00:00Z")])


def test_fact_keys_by_text(store: Any) -> None:
    _fact_memories(store)
    explore = store.explore
    keys = explore.fact_keys(USER, "DB_port")
    assert [(k["key"], k["values"], k["current"]) for k in keys] == [
        ("env:db_port", 1, "1"), ("env:DB_PORT", 3, "7432")]  # latest change first
    assert keys[1]["last_ts"] == "2026-11-03T10:00:01Z"
    assert [k["key"] for k in explore.fact_keys(USER, "a_%")] == ["env:A_%B"]
    assert explore.fact_keys(USER, "a_b") == []  # '_' is not a wildcard
    assert {k["key"] for k in explore.fact_keys(USER)} == {"env:db_port", "env:DB_PORT",
                                                                  "env:A_%B"}
    assert len(explore.fact_keys(USER, limit=1)) == 1
    assert [k["current"] for k in explore.fact_keys(OTHER)] == ["9"]
    assert explore.fact_keys("u_x_", "DB") == []


def test_fact_rows_oldest_first_with_the_chain(store: Any) -> None:
    _fact_memories(store)
    explore = store.explore
    rows = explore.fact_rows(USER, "env:DB_PORT")
    assert [(r["memory_id"], r["value"], r["state"]) for r in rows] == [
        ("m1", "5432", "superseded"), ("m2", "6432", "superseded"), ("m3", "7432", "current")]
    assert [r["thread_id"] for r in rows] == ["t-a", "t-b", "t-c"]
    assert [(r["start_index"], r["end_index"]) for r in rows] == [(0, 2)] * 3
    assert [(r["supersedes"], r["superseded_by"]) for r in rows] == [
        (None, "m2"), ("m1", "m3"), ("m2", None)]
    assert rows[2]["summary"] == "DB_PORT is 7432"
    assert [r["status"] for r in rows] == ["superseded", "superseded", "active"]
    assert all(isinstance(r["memory_id"], str) and isinstance(r["thread_id"], str)
               for r in rows)
    assert [r["value"] for r in explore.fact_rows(USER, "env:db_port")] == ["1"]
    assert explore.fact_rows(USER, "env:DB_%") == []
    assert [r["value"] for r in explore.fact_rows(OTHER, "env:DB_PORT")] == ["9"]

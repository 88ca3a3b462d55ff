"""Forget (issue 26), embedded mode: a thread, a memory, a tenant. Afterwards the exact
value is in no SQL row or file page, no vector point, no recall and no cold archive; a
re-import of the same transcript and a replay do not bring it back; keys are respected
and the other tenant is untouched."""

from __future__ import annotations

import gzip
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from breadcrumb.stores.ports import SearchFilter
from breadcrumb.stores.sql.packed import unpack
from tests.conftest import wait_until
from tests.support.clients import hash_client
from tests.support.memview import (
    add_keys,
    bearer,
    changed_value,
    event,
    secret,
    small_sessions,
)


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[TestClient, Path]]:
    with hash_client(tmp_path, key_cache_seconds=0) as http:
        events = changed_value("u1") + changed_value("u2") + small_sessions("u1", 2)
        assert http.post("/v1/events", json={"events": events}).status_code == 202
        wait_until(lambda: http.get("/v1/stats").json()["pending"] == 0, timeout=90)
        http.app.state.keys = add_keys(tmp_path / "data", [
            ("u1", "agent"), ("u1", "reader"), ("u2", "agent"), ("u2", "reader"),
            ("ops", "admin")])
        yield http, tmp_path / "data"


def _h(http: TestClient, tenant: str, role: str) -> dict[str, str]:
    return bearer(http.app.state.keys[(tenant, role)])


def _sql_hits(data: Path, needle: str) -> list[str]:
    """Where ``needle`` is in any SQLite row (compressed texts read as text), or in the
    bytes of any SQLite file."""
    found = []
    for path in sorted(data.rglob("*.sqlite3*")):
        if needle.encode() in path.read_bytes():
            found.append(f"bytes of {path.name}")
        if path.suffix != ".sqlite3":
            continue
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE "
                                                 "type = 'table'")]
            for table in tables:
                for row in conn.execute(f'SELECT * FROM "{table}"'):
                    # a long text may be stored compressed (issue 49): read it as text too
                    texts = [unpack(v) for v in row if isinstance(v, bytes)]
                    if needle in repr(row) or any(needle in t for t in texts):
                        found.append(f"{path.name}:{table}")
        finally:
            conn.close()
    return found


def _cold_hits(data: Path, needle: str) -> list[str]:
    out = []
    for path in sorted((data / "cold").rglob("*")):
        if path.is_file():
            raw = path.read_bytes()
            text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
            if needle.encode() in text:
                out.append(path.name)
    return out


def _points(http: TestClient, user: str, thread: str) -> int:
    runtime = http.app.state.runtime
    flt = SearchFilter(user, thread_id=thread, statuses=None)
    dense = runtime.embedder.embed_query("API_TOKEN DB_PORT database")
    return len(runtime.index.search_memories(flt, 50, dense=dense)) + \
        len(runtime.index.search_chunks(flt, 50, dense=dense))


def _recalled(http: TestClient, user: str, headers: dict[str, str]) -> str:
    answer = http.post("/v1/recall", headers=headers, json={
        "user_id": user, "query": "the exact API_TOKEN value", "include_superseded": True,
        "include_archived": True, "mode": "source"})
    assert answer.status_code == 200, answer.text
    return answer.text


def _wait(http: TestClient, headers: dict[str, str]) -> None:
    wait_until(lambda: http.get("/v1/stats", headers=headers).json()["pending"] == 0,
               timeout=90)


def _memory_of(http: TestClient, user: str, thread: str, headers: dict[str, str]) -> str:
    page = http.get("/v1/memories", params={"user_id": user, "thread": thread},
                    headers=headers).json()["memories"]
    assert len(page) == 1, page
    return str(page[0]["id"])


def test_forget_a_thread_everywhere_and_for_good(served: tuple[TestClient, Path]) -> None:
    http, data = served
    admin, agent = _h(http, "ops", "admin"), _h(http, "u1", "agent")
    value = secret("u1")
    old = _memory_of(http, "u1", "db-setup", admin)
    archived = http.patch(f"/v1/memories/{old}", headers=admin, json={
        "user_id": "u1", "status": "archived", "reason": "to cold storage", "actor": "t"})
    assert archived.status_code == 200
    assert _cold_hits(data, value) and _sql_hits(data, value) and _points(http, "u1",
                                                                          "db-setup")
    assert value in _recalled(http, "u1", _h(http, "u1", "reader"))

    body = {"user_id": "u1", "thread_id": "db-setup"}
    assert http.post("/v1/forget", json=body, headers=_h(http, "u1", "reader")).status_code \
        == 403
    assert http.post("/v1/forget", json=body, headers=_h(http, "u2", "agent")).status_code \
        == 403
    assert http.post("/v1/forget", json=body).status_code == 401
    done = http.post("/v1/forget", json=body, headers=agent)
    assert done.status_code == 200, done.text
    counts = done.json()["counts"]  # archived: the events were in cold storage only
    assert counts["event_log"] == 3 and counts["cold_objects"] == 2 and "raw_events" not in counts

    def nowhere() -> None:
        assert _sql_hits(data, value) == []
        assert _cold_hits(data, value) == []
        assert _points(http, "u1", "db-setup") == 0
        assert value not in _recalled(http, "u1", _h(http, "u1", "reader"))
        assert http.get("/v1/threads/db-setup/events", headers=admin,
                        params={"user_id": "u1"}).json() == []

    nowhere()
    again = http.post("/v1/events", headers=agent, json={"events": changed_value("u1")})
    assert again.status_code == 202
    refused = again.json()["rejected"]
    assert [r["position"] for r in refused] == [0, 1, 2]
    assert all("forgotten" in r["error"] for r in refused)
    _wait(http, admin)
    nowhere()
    replay = http.post("/v1/admin/replay", json={"name": "g1"}, headers=admin)
    assert replay.status_code == 202
    wait_until(lambda: http.get("/v1/admin/replay", headers=admin).json()["state"]
               in ("done", "failed"), timeout=120)
    assert http.get("/v1/admin/replay", headers=admin).json()["state"] == "done"
    nowhere()
    # the other tenant keeps its own value; the erasure audit holds no content
    assert secret("u2") in _recalled(http, "u2", _h(http, "u2", "reader"))
    assert _points(http, "u2", "db-setup") > 0
    audit = http.get("/v1/erasures", headers=admin).json()["erasures"]
    assert [(a["user_id"], a["scope"], a["actor"]) for a in audit] == [
        ("u1", "thread", f"key:{_key_id(http, 'u1', 'agent')}")]
    assert "db-setup" not in repr(audit) and value not in repr(audit)
    assert http.get("/v1/erasures", headers=agent).status_code == 403


def _key_id(http: TestClient, tenant: str, role: str) -> str:
    return http.app.state.keys[(tenant, role)].split("_")[1]


def test_forget_one_memory(served: tuple[TestClient, Path]) -> None:
    http, data = served
    admin, agent = _h(http, "ops", "admin"), _h(http, "u1", "agent")
    new = _memory_of(http, "u1", "pgbouncer", admin)
    old = _memory_of(http, "u1", "db-setup", admin)
    assert http.post("/v1/forget", headers=agent,
                     json={"memory_id": "no-such-memory"}).status_code == 404
    assert http.post("/v1/forget", headers=_h(http, "u2", "agent"),
                     json={"memory_id": new}).status_code == 404  # not u2's memory
    assert http.post("/v1/forget", headers=agent, json={"memory_id": new, "thread_id": "x"}
                     ).status_code == 422
    done = http.post("/v1/forget", headers=agent, json={"memory_id": new})
    assert done.status_code == 200, done.text
    assert http.get(f"/v1/memories/{new}", headers=admin, params={"user_id": "u1"}
                    ).status_code == 404
    assert http.get("/v1/threads/pgbouncer/events", headers=admin,
                    params={"user_id": "u1"}).json() == []
    assert _sql_hits(data, "u1-pgbouncer-1") == []  # its events (u2 has the same text)
    assert _points(http, "u1", "pgbouncer") == 0
    facts = http.get(f"/v1/memories/{old}/versions", headers=admin,
                     params={"user_id": "u1"}).json()["facts"]
    assert "6432" not in repr(facts)
    again = http.post("/v1/events", headers=agent, json={"events": changed_value("u1")})
    assert [r["position"] for r in again.json()["rejected"]] == [3, 4, 5]
    _wait(http, admin)
    assert _sql_hits(data, "u1-pgbouncer-1") == []
    assert _memory_of(http, "u1", "db-setup", admin) == old  # the rest is untouched


def test_forget_a_tenant(served: tuple[TestClient, Path]) -> None:
    http, data = served
    admin = _h(http, "ops", "admin")
    assert http.post("/v1/forget", headers=_h(http, "u1", "reader"),
                     json={"tenant": True}).status_code == 403
    done = http.post("/v1/forget", headers=admin, json={"user_id": "u1", "tenant": True})
    assert done.status_code == 200, done.text
    reader = _h(http, "u1", "reader")
    assert http.get("/v1/memories", headers=reader).json()["memories"] == []
    assert http.get("/v1/threads", headers=reader).json()["threads"] == []
    assert _sql_hits(data, secret("u1")) == [] and _sql_hits(data, "u1-task-01-0") == []
    u2 = http.get("/v1/memories", headers=_h(http, "u2", "reader")).json()["memories"]
    assert len(u2) == 2
    old = http.post("/v1/events", headers=admin, json={"events": small_sessions("u1", 1)})
    assert old.status_code == 422  # dated before the erasure: a re-import, all refused
    assert "forgotten" in old.json()["error"]["message"]
    later = event("u1", "fresh", 0, "message", "A new start after the erasure.")
    later["ts"] = "2099-01-01T00:00:00Z"
    accepted = http.post("/v1/events", headers=admin, json={"events": [later]})
    assert accepted.status_code == 202 and accepted.json()["accepted"] == 1
    audit = http.get("/v1/erasures", headers=admin, params={"user_id": "u1"}).json()
    assert [a["scope"] for a in audit["erasures"]] == ["tenant"]

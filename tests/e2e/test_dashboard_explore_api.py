"""Issue 47: the explorer's reads over HTTP — a fact's history (every value a key took,
when, in which thread and event, which is current, the supersessions), the tenants a
service holds (an admin's list, a reader's own tenant), threads by last event with their
first request as the title, a thread that is not there answers 404; bad input is a 4xx."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.clients import drain, hash_client
from tests.support.memview import add_keys, bearer, changed_value, event, small_sessions


def moved_again(user: str) -> list[dict[str, Any]]:
    """DB_PORT changed a second time, in a third thread: 5432 → 6432 → 7432."""
    return [event(user, "db-move", 0, "message", "Move the database to the new cluster.", 15),
            event(user, "db-move", 1, "file_edit", "+DB_PORT=7432", 15, path=".env"),
            event(user, "db-move", 2, "session_end", "end", 15)]


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("explore")
    with hash_client(tmp, key_cache_seconds=0) as client:
        events = changed_value("u1") + moved_again("u1") + small_sessions("u1", 2)
        events += changed_value("u2")
        assert client.post("/v1/events", json={"events": events}).status_code == 202
        drain(client)
        yield client


def test_fact_history_every_value_where_and_which_is_current(http: TestClient) -> None:
    facts = http.get("/v1/facts", params={"user_id": "u1", "q": "DB_PORT"}).json()["facts"]
    by_key = {f["key"]: f for f in facts}
    assert all("DB_PORT" in k for k in by_key) and "env:DB_PORT" in by_key
    assert by_key["env:DB_PORT"]["values"] == 3 and by_key["env:DB_PORT"]["current"] == "7432"
    answer = http.get("/v1/facts/history", params={"user_id": "u1", "key": "env:DB_PORT"})
    assert answer.status_code == 200, answer.text
    history = answer.json()
    values = history["values"]
    assert [v["value"] for v in values] == ["5432", "6432", "7432"]
    assert [v["thread_id"] for v in values] == ["db-setup", "pgbouncer", "db-move"]
    assert [v["event_index"] for v in values] == [1, 1, 1]  # the file_edit that said it
    assert [v["current"] for v in values] == [False, False, True]
    assert history["current"]["value"] == "7432"
    assert [v["ts"] for v in values] == sorted(v["ts"] for v in values)
    changes = [(c["from_value"], c["to_value"]) for c in history["supersessions"]]
    assert changes == [("5432", "6432"), ("6432", "7432")]
    assert all(c["to"] == b["memory_id"] for c, b in zip(history["supersessions"],
                                                          values[1:], strict=True))
    missing = http.get("/v1/facts/history", params={"user_id": "u1", "key": "env:NOPE"})
    assert missing.status_code == 404 and "env:NOPE" in missing.text


def test_tenants_and_their_scope(http: TestClient, tmp_path: Path) -> None:
    open_list = http.get("/v1/dashboard/tenants").json()  # no keys: loopback, everything
    assert {t["tenant"] for t in open_list["tenants"]} == {"u1", "u2"}
    assert open_list["default"] == "local" and open_list["all"] is True
    assert http.get("/v1/dashboard/whoami").json()["default_tenant"] == "local"
    with hash_client(tmp_path, key_cache_seconds=0) as keyed:
        events = changed_value("u1") + changed_value("u2")
        assert keyed.post("/v1/events", json={"events": events}).status_code == 202
        drain(keyed)
        keys = add_keys(tmp_path / "data", [("u1", "admin"), ("u2", "reader")])
        assert keyed.get("/v1/dashboard/tenants").status_code == 401  # keys exist now
        admin = keyed.get("/v1/dashboard/tenants", headers=bearer(keys[("u1", "admin")]))
        assert {t["tenant"] for t in admin.json()["tenants"]} == {"u1", "u2"}
        assert admin.json()["default"] == "u1"
        reader = bearer(keys[("u2", "reader")])
        mine = keyed.get("/v1/dashboard/tenants", headers=reader)
        assert mine.json() == {"tenants": [{"tenant": "u2"}], "default": "u2", "all": False}
        other = keyed.get("/v1/facts/history", params={"user_id": "u1", "key": "env:DB_PORT"},
                          headers=reader)
        assert other.status_code == 403
        own = keyed.get("/v1/facts/history", params={"key": "env:DB_PORT"}, headers=reader)
        assert [v["value"] for v in own.json()["values"]] == ["5432", "6432"]
        assert keyed.get("/v1/dashboard/threads/db-setup", params={"user_id": "u1"},
                         headers=reader).status_code == 403


def test_threads_by_last_event_with_titles_and_404(http: TestClient) -> None:
    page = http.get("/v1/dashboard/threads", params={"user_id": "u1", "limit": 2}).json()
    first = page["threads"]
    assert [t["thread_id"] for t in first] == ["db-move", "task-01"]  # day 15, day 11
    assert first[0]["title"] == "Move the database to the new cluster."
    assert first[0]["memories"] == 1 and first[0]["project_id"] == "shop"
    rest = http.get("/v1/dashboard/threads", params={"user_id": "u1", "limit": 10,
                                                     "before": page["next_before"]}).json()
    order = [t["thread_id"] for t in rest["threads"]]
    assert order == ["task-00", "pgbouncer", "db-setup"] and rest["next_before"] is None
    bad = http.get("/v1/dashboard/threads", params={"user_id": "u1", "before": "zz"})
    assert bad.status_code == 422 and "before" in bad.text
    one = http.get("/v1/dashboard/threads/pgbouncer", params={"user_id": "u1"}).json()
    assert one["title"] == "Route the database through pgbouncer."
    assert one["event_count"] == 3 and one["agent_id"] == "agent-u1"
    gone = http.get("/v1/dashboard/threads/never-there", params={"user_id": "u1"})
    assert gone.status_code == 404 and "never-there" in gone.text
    assert http.get("/v1/dashboard/threads/db-move", params={"user_id": "u2"}).status_code == 404

"""The dashboard's own JSON (routes.dashboard_data) and ``RecallRequest.explain``: scoped
by key, 4xx on bad input, and the explanation agreeing with the answer it explains."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.conftest import wait_until
from tests.support.clients import hash_client
from tests.support.memview import add_keys, bearer, changed_value, event

QUESTION = "which DB_PORT do we use now?"


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp: Path = tmp_path_factory.mktemp("dash")
    with hash_client(tmp, key_cache_seconds=0) as client:
        events = changed_value("u1") + changed_value("u2") + [
            event("u1", "open", 0, "message", "Typing still.", 20)]
        assert client.post("/v1/events", json={"events": events}).status_code == 202
        wait_until(lambda: client.get("/v1/stats").json()["unprocessed"] == 0, timeout=60)
        client.app.state.keys = add_keys(tmp / "data", [("u1", "reader"), ("u2", "reader"),
                                                        ("u1", "admin"), ("u1", "agent")])
        yield client


def _h(http: TestClient, tenant: str, role: str) -> dict[str, str]:
    return bearer(http.app.state.keys[(tenant, role)])


def _memory(http: TestClient, thread: str) -> str:
    page = http.get("/v1/memories", params={"thread": thread}, headers=_h(http, "u1", "reader"))
    return str(page.json()["memories"][0]["id"])


def test_whoami_names_the_key(http: TestClient) -> None:
    assert http.get("/v1/dashboard/whoami").status_code == 401
    me = http.get("/v1/dashboard/whoami", headers=_h(http, "u2", "reader")).json()
    assert me == {"keys": True, "tenant": "u2", "role": "reader", "default_tenant": "u2"}


def test_lifecycle_and_thread_windows_are_scoped(http: TestClient) -> None:
    mid = _memory(http, "pgbouncer")
    mine = http.get(f"/v1/dashboard/memories/{mid}/lifecycle", headers=_h(http, "u1", "reader"))
    assert mine.status_code == 200, mine.text
    body = mine.json()
    assert body["tier"] == "provisional" and body["next"]["action"] == "delete"
    assert body["ttl_seconds"] == 7 * 86400
    other = http.get(f"/v1/dashboard/memories/{mid}/lifecycle", headers=_h(http, "u2", "reader"))
    assert other.status_code == 404  # another tenant's id: not found, nothing leaked
    named = http.get(f"/v1/dashboard/memories/{mid}/lifecycle", params={"user_id": "u1"},
                     headers=_h(http, "u2", "reader"))
    assert named.status_code == 403
    agent = http.get(f"/v1/dashboard/memories/{mid}/lifecycle", headers=_h(http, "u1", "agent"))
    assert agent.status_code == 403
    thread = http.get("/v1/dashboard/threads/open", headers=_h(http, "u1", "reader")).json()
    assert thread["open_window"]["events"] == 1 and thread["windows"] == []
    closed = http.get("/v1/dashboard/threads/pgbouncer", headers=_h(http, "u1", "reader")).json()
    assert [(w["start_index"], w["end_index"]) for w in closed["windows"]] == [(0, 2)]
    assert closed["open_window"] is None
    theirs = http.get("/v1/dashboard/threads/open", headers=_h(http, "u2", "reader"))
    assert theirs.status_code == 404  # u2 has no thread "open" (issue 47: said, not blank)


def test_bad_input_is_4xx(http: TestClient) -> None:
    admin = _h(http, "u1", "admin")
    for path in ("/v1/dashboard/memories/nope/lifecycle", "/v1/dashboard/memories/%00/lifecycle"):
        got = http.get(path, headers=admin)
        assert got.status_code == 404, (path, got.text)
    long = http.get("/v1/dashboard/threads/" + "x" * 300, headers=admin)
    assert long.status_code == 422
    bad = http.post("/v1/recall", json={"query": "x", "explain": "maybe"}, headers=admin)
    assert bad.status_code == 422


def test_explain_agrees_with_the_answer(http: TestClient) -> None:
    h = _h(http, "u1", "reader")
    plain = http.post("/v1/recall", json={"query": QUESTION}, headers=h).json()
    assert "explain" not in plain
    answer = http.post("/v1/recall", json={"query": QUESTION, "explain": True, "k": 2},
                       headers=h).json()
    ex = answer["explain"]
    top = [c["id"] for c in ex["candidates"] if c["top"]]
    assert top == [m["id"] for m in answer["memories"]] and ex["k"] == 2
    scores = [c["score"] for c in ex["candidates"]]
    assert scores == sorted(scores, reverse=True)
    assert all(abs(sum(c["score_parts"].values()) - 2 * c["score_parts"]["stale_penalty"]
                   - c["score"]) < 1e-3 for c in ex["candidates"])
    followed = {r["memory_id"] for r in ex["recall"]["ranges"]}
    assert ex["recall"]["follow"] and {e["memory_id"] for e in answer["evidence"]} <= followed
    assert ex["extract"]["max_tokens"] == 800
    assert 0 < ex["extract"]["tokens"] <= 800
    assert "+DB_PORT=6432" in answer["evidence"][0]["extracted_text"]

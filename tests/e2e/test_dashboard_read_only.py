"""Issue 47 item 1: looking is read-only. A recall that says ``"read_only": true`` (the
dashboard's search and recall inspector send it) leaves every memory's hits, last use
(the TTL's touch) and tier as they were, and the sweeper then promotes nothing; the same
recalls without the flag (an agent's) count as before: hits, touch, promotion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from tests.support.clients import drain, hash_client
from tests.support.memview import add_keys, bearer, changed_value, small_sessions

QUESTION = "which DB_PORT do we use now?"
INSPECTOR = {"query": QUESTION, "explain": True, "read_only": True, "k": 5, "max_tokens": 800}


def _state(http: TestClient, user: str, headers: dict[str, str] | None = None
           ) -> dict[str, tuple[Any, ...]]:
    """Per memory: hits, last use, tier, status and the lifecycle's touch time."""
    page = http.get("/v1/memories", params={"user_id": user, "limit": 200}, headers=headers)
    out = {}
    for m in page.json()["memories"]:
        life = http.get(f"/v1/dashboard/memories/{m['id']}/lifecycle",
                        params={"user_id": user}, headers=headers).json()
        out[m["id"]] = (m["hit_count"], m["last_used_at"], m["tier"], m["status"],
                        life.get("touched_at"))
    return out


def _settle(http: TestClient) -> None:
    runtime = http.app.state.runtime
    runtime.recall.flush_usage()  # uses are written off the answer's path
    runtime.lifecycle.sweep()  # promotion reads the hits


def test_inspector_and_search_leave_hits_ttl_and_tier_unchanged(tmp_path: Path) -> None:
    with hash_client(tmp_path) as http:
        events = changed_value("u1") + small_sessions("u1", 2)
        assert http.post("/v1/events", json={"events": events}).status_code == 202
        drain(http)
        before = _state(http, "u1")
        for _ in range(5):  # more than lifecycle_confirm_hits (3)
            answer = http.post("/v1/recall", json={"user_id": "u1", **INSPECTOR})
            assert answer.status_code == 200 and answer.json()["memories"]
            search = http.post("/v1/recall", json={"user_id": "u1", "query": QUESTION,
                                                   "read_only": True})
            assert search.status_code == 200 and search.json()["memories"]
        _settle(http)
        assert _state(http, "u1") == before  # no hit, no touch, no promotion
        snapshot = http.get("/v1/dashboard/snapshot").json()
        assert snapshot["recalls"]["total"] == 0  # looks are not agents' recalls

        # the same recall as an agent makes it: counted as before (the check can fail)
        top = answer.json()["memories"][0]["id"]
        for _ in range(3):
            assert http.post("/v1/recall", json={"user_id": "u1", "query": QUESTION,
                                                 "explain": True}).status_code == 200
        _settle(http)
        after = _state(http, "u1")
        assert after[top][0] == before[top][0] + 3 and after[top][1] is not None
        assert after[top][2] == "confirmed" and before[top][2] == "provisional"
        assert http.get("/v1/dashboard/snapshot").json()["recalls"]["total"] == 3


def test_read_only_with_keys_and_bad_values(tmp_path: Path) -> None:
    with hash_client(tmp_path, key_cache_seconds=0) as http:
        assert http.post("/v1/events", json={"events": changed_value("u1")}).status_code == 202
        drain(http)
        keys = add_keys(tmp_path / "data", [("u1", "reader"), ("u2", "reader")])
        reader = bearer(keys[("u1", "reader")])
        before = _state(http, "u1", reader)
        for _ in range(4):
            answer = http.post("/v1/recall", json=INSPECTOR, headers=reader)
            assert answer.status_code == 200 and answer.json()["memories"]
        _settle(http)
        assert _state(http, "u1", reader) == before
        other = http.post("/v1/recall", json={**INSPECTOR, "user_id": "u1"},
                          headers=bearer(keys[("u2", "reader")]))
        assert other.status_code == 403  # a look is no way into another tenant
        bad = http.post("/v1/recall", json={**INSPECTOR, "read_only": "perhaps"},
                        headers=reader)
        assert bad.status_code == 422 and "read_only" in bad.text

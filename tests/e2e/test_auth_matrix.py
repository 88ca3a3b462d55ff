"""Authorization matrix: every endpoint × {no key, unknown key, revoked key, other tenant,
agent, reader, admin} → the status the contract ("Keys, tenants and roles") gives.

A real embedded runtime (SQLite, Qdrant Edge, hash embedder) behind the real app; keys are
created in its data dir exactly as ``breadcrumb keys create`` does, after the app started
(so the service must pick them up without a restart).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from breadcrumb.settings import Settings
from breadcrumb.stores.keys.store import new_key, sqlite_key_store, utc_now_iso
from tests.conftest import example_events, wait_until

TENANT, OTHER = "t1", "t2"
ROLES = ("agent", "reader", "admin")
PUBLISH, RECALL, READ, ADMIN = {"agent", "admin"}, set(ROLES), {"reader", "admin"}, {"admin"}


def _event(user_id: str, index: int = 0) -> dict[str, Any]:
    return {**example_events()[0], "user_id": user_id, "thread_id": "th",
            "event_id": f"{user_id}-e{index}", "index": index}


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: str
    roles: set[str]
    ok: int  # the status when allowed (the route's own answer)
    tenant: bool = False  # names a user_id: another tenant's key gets 403
    body: Any = None
    params: dict[str, Any] | None = None


def _endpoints(user: str) -> list[Endpoint]:
    q = {"user_id": user}
    return [
        Endpoint("events", "POST", "/v1/events", PUBLISH, 202, True,
                 {"events": [_event(user)]}),
        Endpoint("flush", "POST", "/v1/flush", PUBLISH, 202, True,
                 {"user_id": user, "thread_id": "th"}),
        Endpoint("recall", "POST", "/v1/recall", RECALL, 200, True,
                 {"user_id": user, "query": "deploy pipeline"}),
        Endpoint("recall_source", "POST", "/v1/recall_source", RECALL, 200, True,
                 {"user_id": user, "source_thread_id": "th", "source_start_index": 0,
                  "source_end_index": 5, "query": "deploy"}),
        Endpoint("thread_events", "GET", "/v1/threads/th/events", READ, 200, True, params=q),
        Endpoint("memory", "GET", "/v1/memories/m-none", READ, 404, True, params=q),
        Endpoint("audit", "GET", "/v1/memories/m-none/audit", READ, 404, True, params=q),
        Endpoint("patch", "PATCH", "/v1/memories/m-none", ADMIN, 404, True,
                 {"user_id": user, "status": "archived", "reason": "test", "actor": "t"}),
        # issue 26: browse and forget
        Endpoint("list_memories", "GET", "/v1/memories", READ, 200, True, params=q),
        Endpoint("versions", "GET", "/v1/memories/m-none/versions", READ, 404, True, params=q),
        Endpoint("threads", "GET", "/v1/threads", READ, 200, True, params=q),
        Endpoint("dead_letters", "GET", "/v1/dead_letters", READ, 200, True, params=q),
        Endpoint("redrive", "POST", "/v1/dead_letters/999999/redrive", ADMIN, 404, body={}),
        Endpoint("forget", "POST", "/v1/forget", PUBLISH, 200, True,
                 {"user_id": user, "thread_id": "never-written"}),
        Endpoint("erasures", "GET", "/v1/erasures", ADMIN, 200),
        Endpoint("stats", "GET", "/v1/stats", set(ROLES), 200),
        Endpoint("snapshot", "GET", "/v1/dashboard/snapshot", set(ROLES), 200),
        Endpoint("stream", "GET", "/v1/dashboard/stream", set(ROLES), 200,
                 params={"limit": 1}),
        # the dashboard's views (routes.dashboard_data)
        Endpoint("whoami", "GET", "/v1/dashboard/whoami", set(ROLES), 200),
        Endpoint("lifecycle", "GET", "/v1/dashboard/memories/m-none/lifecycle", READ, 404, True,
                 params=q),
        Endpoint("thread_windows", "GET", "/v1/dashboard/threads/th", READ, 200, True, params=q),
        # issue 47: the explorer (routes.explore); tenants are scoped in the route
        Endpoint("tenants", "GET", "/v1/dashboard/tenants", set(ROLES), 200),
        Endpoint("recent_threads", "GET", "/v1/dashboard/threads", READ, 200, True, params=q),
        Endpoint("facts", "GET", "/v1/facts", READ, 200, True, params=q),
        Endpoint("fact_history", "GET", "/v1/facts/history", READ, 404, True,
                 params={**q, "key": "env:NEVER_SET"}),
        Endpoint("metrics", "GET", "/metrics", ADMIN, 200),
        Endpoint("replay", "POST", "/v1/admin/replay", ADMIN, 409, body={"name": "main"}),
        Endpoint("replay_status", "GET", "/v1/admin/replay", ADMIN, 200),
        Endpoint("generations", "GET", "/v1/admin/generations", ADMIN, 200),
        Endpoint("remove_generation", "DELETE", "/v1/admin/generations/main", ADMIN, 409),
        Endpoint("optimize", "POST", "/v1/admin/optimize", ADMIN, 200),
        Endpoint("healthz", "GET", "/healthz", set(), 200),
        Endpoint("dashboard_page", "GET", "/dashboard", set(), 200),
    ]


CALLERS = ("no key", "unknown key", "revoked key", "other tenant", *ROLES)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, str]]]:
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.query_api.app import create_app

    data_dir: Path = tmp_path_factory.mktemp("auth") / "data"
    runtime = build_runtime(Settings(data_dir=data_dir, embedder="hash", key_cache_seconds=0))
    with TestClient(create_app(runtime)) as http:
        assert http.get("/v1/stats").status_code == 200  # no key yet: open (in-process)
        store = sqlite_key_store(data_dir)
        keys: dict[str, str] = {}
        for role in ROLES:
            record, keys[role] = new_key(TENANT, role)
            store.add(record)
        for role in ("agent", "reader"):
            record, keys[f"other {role}"] = new_key(OTHER, role)
            store.add(record)
        record, keys["revoked key"] = new_key(TENANT, "admin")
        store.add(record)
        assert store.revoke(record.key_id, utc_now_iso())
        keys["unknown key"] = "bc_0123456789ab_" + "x" * 43
        yield http, keys


def _headers(caller: str, endpoint: Endpoint, keys: dict[str, str]) -> dict[str, str]:
    if caller == "no key":
        return {}
    if caller == "other tenant":  # the other tenant's key with a role the route allows
        key = keys["other reader" if endpoint.method == "GET" else "other agent"]
    else:
        key = keys[caller]
    return {"Authorization": f"Bearer {key}"}


def expected(caller: str, endpoint: Endpoint) -> int:
    """The contract's answer for this caller on this endpoint."""
    if not endpoint.roles:  # public: health and the static dashboard page
        return endpoint.ok
    if caller in ("no key", "unknown key", "revoked key"):
        return 401
    role = ("reader" if endpoint.method == "GET" else "agent") if caller == "other tenant" \
        else caller
    if role not in endpoint.roles:
        return 403
    if caller == "other tenant" and endpoint.tenant:
        return 403
    return endpoint.ok


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("endpoint", _endpoints(TENANT), ids=lambda e: e.name)
def test_matrix(served: tuple[TestClient, dict[str, str]], endpoint: Endpoint,
                caller: str) -> None:
    http, keys = served
    answer = http.request(endpoint.method, endpoint.path, json=endpoint.body,
                          params=endpoint.params, headers=_headers(caller, endpoint, keys))
    assert answer.status_code == expected(caller, endpoint), answer.text
    if answer.status_code in (401, 403):
        assert answer.json()["error"]["code"] and answer.json()["error"]["message"]
    if answer.status_code == 401:
        assert answer.headers["www-authenticate"] == "Bearer"


def test_absent_user_id_is_the_keys_tenant(served: tuple[TestClient, dict[str, str]]) -> None:
    http, keys = served
    agent = {"Authorization": f"Bearer {keys['agent']}"}
    reader = {"Authorization": f"Bearer {keys['reader']}"}
    event = {k: v for k, v in _event(TENANT, 1).items() if k != "user_id"}
    event["event_id"] = "no-user-1"
    assert http.post("/v1/events", json={"events": [event]}, headers=agent).status_code == 202
    wait_until(lambda: bool(http.get("/v1/threads/th/events", params={"start": 1, "end": 1},
                                     headers=reader).json()), timeout=30)
    rows = http.get("/v1/threads/th/events", params={"start": 1, "end": 1}, headers=reader)
    assert rows.status_code == 200 and [r["event_id"] for r in rows.json()] == ["no-user-1"]
    assert rows.json()[0]["user_id"] == TENANT
    recall = http.post("/v1/recall", json={"query": "deploy"}, headers=reader)
    assert recall.status_code == 200


@pytest.mark.parametrize("user_id", ["T1", " t1", "t1 ", "t%", "*", "t1/x", "", "t2"])
def test_variants_of_user_id_are_another_tenant(
        served: tuple[TestClient, dict[str, str]], user_id: str) -> None:
    http, keys = served
    reader = {"Authorization": f"Bearer {keys['reader']}"}
    for params in ({"user_id": user_id}, [("user_id", TENANT), ("user_id", user_id)]):
        answer = http.get("/v1/threads/th/events", params=params, headers=reader)
        assert answer.status_code == 403 and answer.json()["error"]["code"] == "tenant_forbidden"
    body = {"user_id": user_id, "query": "deploy"}
    assert http.post("/v1/recall", json=body, headers=reader).status_code == 403
    mixed = {"events": [_event(TENANT, 7), {**_event(TENANT, 8), "user_id": user_id}]}
    agent = {"Authorization": f"Bearer {keys['agent']}"}
    refused = http.post("/v1/events", json=mixed, headers=agent)
    assert refused.status_code == 403 and "events[1]" in refused.json()["error"]["message"]
    stored = http.get("/v1/threads/th/events", params={"start": 7, "end": 8}, headers=reader)
    assert stored.json() == []  # nothing of a refused batch is written


def test_admin_may_name_any_tenant(served: tuple[TestClient, dict[str, str]]) -> None:
    http, keys = served
    admin = {"Authorization": f"Bearer {keys['admin']}"}
    assert http.post("/v1/events", json={"events": [_event(OTHER, 0)]},
                     headers=admin).status_code == 202

    def rows() -> list[dict[str, Any]]:
        answer = http.get("/v1/threads/th/events", params={"user_id": OTHER}, headers=admin)
        assert answer.status_code == 200
        found: list[dict[str, Any]] = answer.json()
        return found

    wait_until(lambda: bool(rows()), timeout=30)  # raw events are stored by the runner
    assert rows()[0]["user_id"] == OTHER


def test_key_created_or_revoked_while_serving(
        served: tuple[TestClient, dict[str, str]], tmp_path: Path) -> None:
    http, _ = served
    store = sqlite_key_store(Path(http.app.state.runtime.settings.data_dir))  # type: ignore[attr-defined]
    record, key = new_key("t3", "reader")
    store.add(record)
    auth = {"Authorization": f"Bearer {key}"}
    assert http.get("/v1/stats", headers=auth).status_code == 200
    store.revoke(record.key_id, utc_now_iso())
    assert http.get("/v1/stats", headers=auth).status_code == 401
    wrong_secret = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    assert http.get("/v1/stats", headers={"Authorization": f"Bearer {wrong_secret}"}
                    ).status_code == 401


def test_dashboard_scoped_to_the_keys_tenant(served: tuple[TestClient, dict[str, str]]) -> None:
    http, keys = served
    admin = {"Authorization": f"Bearer {keys['admin']}"}
    reader = {"Authorization": f"Bearer {keys['reader']}"}
    other = {"Authorization": f"Bearer {keys['other reader']}"}
    assert http.post("/v1/recall", json={"query": "secret plans of t1"},
                     headers=reader).status_code == 200
    assert http.post("/v1/recall", json={"query": "secret plans of t2"},
                     headers=other).status_code == 200
    seen = {name: http.get("/v1/dashboard/snapshot", headers=h).json()
            for name, h in (("admin", admin), ("reader", reader), ("other", other))}
    users = {name: {r["user_id"] for r in snap["recalls"]["recent"]} for name, snap in
             seen.items()}
    assert users["admin"] >= {TENANT, OTHER}
    assert users["reader"] == {TENANT} and users["other"] == {OTHER}
    assert seen["other"]["scope"] == OTHER and "scope" not in seen["admin"]
    assert "t1" not in str(seen["other"]["recalls"])
    stream = http.get("/v1/dashboard/stream", params={"limit": 1}, headers=other)
    assert "secret plans of t2" in stream.text and "secret plans of t1" not in stream.text


def test_a_key_holders_oversized_body_is_refused_413(tmp_path: Path) -> None:
    """The tenant check reads a key-holder's body to bind ``user_id``; past
    ``limit_body_bytes`` it stops reading (hands the rest on unbound) and the input guard
    answers 413; the next request on the same client is served."""
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.query_api.app import create_app

    data_dir = tmp_path / "data"
    runtime = build_runtime(Settings(data_dir=data_dir, embedder="hash", key_cache_seconds=0,
                                     limit_body_bytes=64_000))
    with TestClient(create_app(runtime)) as http:
        record, key = new_key(TENANT, "agent")
        sqlite_key_store(data_dir).add(record)
        headers = {"Authorization": f"Bearer {key}"}
        big = {"events": [{**_event(TENANT, i), "content": "x" * 9_000} for i in range(12)]}
        refused = http.post("/v1/events", json=big, headers=headers)
        assert refused.status_code == 413, refused.text
        assert refused.json()["error"]["code"] == "body_too_large"
        small = http.post("/v1/events", json={"events": [_event(TENANT)]}, headers=headers)
        assert small.status_code == 202, small.text

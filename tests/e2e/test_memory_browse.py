"""Browsing the memory over HTTP (issue 26): list with filters and keyset pages, versions
of a changed value, threads with their open window, dead letters and their re-drive."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import wait_until
from tests.support.clients import hash_client
from tests.support.memview import add_keys, bearer, changed_value, event, small_sessions


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("browse")
    with hash_client(tmp, key_cache_seconds=0) as client:
        events = changed_value("u1") + small_sessions("u1", 7) + small_sessions("u2", 2)
        events += [event("u1", "ops-run", 0, "message", "Restart the ops runner.", 20, "ops"),
                   event("u1", "ops-run", 1, "session_end", "end", 20, "ops")]
        events += [event("u1", "open-thread", 0, "message", "Still typing this one.", 21),
                   event("u1", "open-thread", 1, "message", "And a second line.", 21)]
        assert client.post("/v1/events", json={"events": events}).status_code == 202
        wait_for(client)
        client.app.state.keys = add_keys(tmp / "data", [("u1", "reader"), ("u2", "reader"),
                                                        ("u1", "agent"), ("u1", "admin")])
        yield client


def wait_for(client: TestClient, headers: dict[str, str] | None = None) -> None:
    """Everything derived except the open thread's window (no session_end)."""
    wait_until(lambda: client.get("/v1/stats", headers=headers).json()["unprocessed"] == 0,
               timeout=60)


def _h(http: TestClient, tenant: str, role: str) -> dict[str, str]:
    return bearer(http.app.state.keys[(tenant, role)])


def _all_pages(http: TestClient, headers: dict[str, str], **params: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    cursor = None
    for _ in range(100):
        query = {**params, **({"cursor": cursor} if cursor else {})}
        page = http.get("/v1/memories", params=query, headers=headers)
        assert page.status_code == 200, page.text
        seen += page.json()["memories"]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return seen
    raise AssertionError("paging did not end")


def test_keyset_pages_cover_every_memory_once_in_order(http: TestClient) -> None:
    h = _h(http, "u1", "reader")
    whole = http.get("/v1/memories", params={"limit": 200}, headers=h).json()["memories"]
    assert len(whole) >= 10 and {m["user_id"] for m in whole} == {"u1"}
    paged = _all_pages(http, h, limit=3)
    assert [m["id"] for m in paged] == [m["id"] for m in whole]
    times = [(m["created_at"], m["id"]) for m in paged]
    assert times == sorted(times, reverse=True)
    by_importance = _all_pages(http, h, limit=4, sort="importance")
    assert sorted(m["id"] for m in by_importance) == sorted(m["id"] for m in whole)
    keys = [(m["importance"], m["id"]) for m in by_importance]
    assert keys == sorted(keys, reverse=True)
    hits = _all_pages(http, h, limit=5, sort="hits")
    assert [m["hit_count"] for m in hits] == sorted((m["hit_count"] for m in hits), reverse=True)
    assert all(set(m["source_range"]) == {"thread_id", "start_index", "end_index"} for m in hits)


def test_filters_narrow_the_list(http: TestClient) -> None:
    h = _h(http, "u1", "reader")

    def ids(**params: Any) -> set[str]:
        return {m["id"] for m in _all_pages(http, h, limit=50, **params)}

    every = ids()
    by_thread = _all_pages(http, h, thread="task-03")
    assert len(by_thread) == 1 and by_thread[0]["source_range"]["thread_id"] == "task-03"
    ops = _all_pages(http, h, project="ops")
    assert ops and {m["project_id"] for m in ops} == {"ops"}
    assert ids(project="shop") | ids(project="ops") == every
    text = _all_pages(http, h, text="PGBOUNCER")  # case-insensitive
    assert [m["source_range"]["thread_id"] for m in text] == ["pgbouncer"]
    tagged = _all_pages(http, h, tag=".env")
    assert {m["source_range"]["thread_id"] for m in tagged} == {"db-setup", "pgbouncer"}
    assert ids(tag=".en") == set()  # a whole tag, not a substring
    assert ids(status="active") <= every and ids(status="archived") == set()
    assert ids(tier="provisional") | ids(tier="confirmed") | ids(tier="active") == every
    assert ids(text="100%_") == set()  # LIKE wildcards are taken literally


def test_bad_parameters_are_4xx(http: TestClient) -> None:
    h = _h(http, "u1", "reader")
    for params in ({"sort": "random"}, {"status": "gone"}, {"tier": "x"}, {"limit": 0},
                   {"limit": 201}, {"cursor": "not-a-cursor"}):
        r = http.get("/v1/memories", params=params, headers=h)
        assert r.status_code == 422, (params, r.text)
        assert r.json()["error"]["message"]
    first = http.get("/v1/memories", params={"limit": 1}, headers=h).json()["next_cursor"]
    other_sort = http.get("/v1/memories", params={"cursor": first, "sort": "hits"}, headers=h)
    assert other_sort.status_code == 422 and "sort" in other_sort.json()["error"]["message"]


def test_tenants_and_roles(http: TestClient) -> None:
    u2 = _all_pages(http, _h(http, "u2", "reader"))
    assert u2 and {m["user_id"] for m in u2} == {"u2"}
    other = http.get("/v1/memories", params={"user_id": "u1"}, headers=_h(http, "u2", "reader"))
    assert other.status_code == 403
    agent = http.get("/v1/memories", headers=_h(http, "u1", "agent"))
    assert agent.status_code == 403  # the contract: agents publish and recall
    assert http.get("/v1/memories").status_code == 401
    admin = http.get("/v1/memories", params={"user_id": "u2"}, headers=_h(http, "u1", "admin"))
    assert admin.status_code == 200 and {m["user_id"] for m in admin.json()["memories"]} == {"u2"}
    threads = http.get("/v1/threads", headers=_h(http, "u2", "reader")).json()["threads"]
    assert {t["thread_id"] for t in threads} == {"task-00", "task-01"}


def test_versions_of_a_changed_value(http: TestClient) -> None:
    h = _h(http, "u1", "reader")
    new = _all_pages(http, h, thread="pgbouncer")[0]
    got = http.get(f"/v1/memories/{new['id']}/versions", headers=h)
    assert got.status_code == 200
    facts = {f["key"]: f["versions"] for f in got.json()["facts"]}
    port = facts["env:DB_PORT"]
    assert [(v["value"], v["state"]) for v in port] == [("5432", "superseded"),
                                                        ("6432", "current")]
    assert port[0]["ts"] < port[1]["ts"] and port[1]["memory_id"] == new["id"]
    chain = got.json()["versions"]
    assert new["id"] in [v["id"] for v in chain] and all(v["created_at"] for v in chain)
    missing = http.get("/v1/memories/nope/versions", headers=h)
    assert missing.status_code == 404
    other = http.get(f"/v1/memories/{new['id']}/versions", headers=_h(http, "u2", "reader"))
    assert other.status_code == 404  # another tenant's id: not found, nothing leaked


def test_threads_with_counts_times_and_open_window(http: TestClient) -> None:
    h = _h(http, "u1", "reader")
    threads: list[dict[str, Any]] = []
    after = None
    while True:
        page = http.get("/v1/threads", params={"limit": 4, **({"after": after} if after else {})},
                        headers=h).json()
        threads += page["threads"]
        after = page["next_after"]
        if after is None:
            break
    by_id = {t["thread_id"]: t for t in threads}
    assert len(by_id) == len(threads) == 11
    db = by_id["db-setup"]
    assert (db["event_count"], db["agent_id"], db["project_id"]) == (3, "agent-u1", "shop")
    assert (db["first_ts"], db["last_ts"]) == ("2026-11-02T10:00:00Z", "2026-11-02T10:02:00Z")
    assert db["memories"] == 1 and db["open_window"] is None
    window = by_id["open-thread"]["open_window"]
    assert window is not None and window["events"] == 2
    assert (window["first_index"], window["last_index"]) == (0, 1)
    assert by_id["ops-run"]["project_id"] == "ops"
    ops = http.get("/v1/threads", params={"project": "ops"}, headers=h).json()["threads"]
    assert [t["thread_id"] for t in ops] == ["ops-run"]


def test_dead_letters_listed_scoped_and_redriven(http: TestClient) -> None:
    admin, reader = _h(http, "u1", "admin"), _h(http, "u1", "reader")
    broken = event("u1", "late", 0, "message", "", 22)
    del broken["content"]
    r = http.post("/v1/events", json={"events": [broken]}, headers=_h(http, "u1", "agent"))
    assert r.status_code == 422
    letters = http.get("/v1/dead_letters", headers=reader).json()["dead_letters"]
    mine = [x for x in letters if x["event_id"] == "u1-late-0"]
    assert len(mine) == 1 and "content" in mine[0]["reason"] and mine[0]["field"] == "content"
    assert '"thread_id":"late"' in mine[0]["payload"]  # the payload as received
    assert mine[0]["redrive"] is None
    assert not [x for x in http.get("/v1/dead_letters", headers=_h(http, "u2", "reader"))
                .json()["dead_letters"] if x["event_id"] == "u1-late-0"]
    letter = mine[0]["id"]
    path = f"/v1/dead_letters/{letter}/redrive"
    assert http.post(path, json={}, headers=reader).status_code == 403
    before = http.get("/v1/stats", headers=admin).json()["dead_letters"]
    still = http.post(path, json={}, headers=admin)
    assert still.status_code == 422 and "content" in still.json()["error"]["message"]
    assert http.get("/v1/stats", headers=admin).json()["dead_letters"] == before  # no second letter
    fixed = {**broken, "content": "The late message, fixed."}
    done = http.post(path, json={"event": fixed, "actor": "ops"}, headers=admin)
    assert done.status_code == 200 and done.json()["outcome"] == "accepted"
    assert http.post(path, json={}, headers=admin).status_code == 409
    again = [x for x in http.get("/v1/dead_letters", headers=admin).json()["dead_letters"]
             if x["id"] == letter][0]
    assert again["redrive"]["outcome"] == "accepted"
    wait_for(http, admin)
    late = http.get("/v1/threads/late/events", headers=reader).json()
    assert [e["content"] for e in late] == ["The late message, fixed."]
    assert http.post("/v1/dead_letters/999999/redrive", json={}, headers=admin).status_code == 404
    assert http.post("/v1/dead_letters/x1/redrive", json={}, headers=admin).status_code == 404


def test_text_pages_through_a_bounded_window(http: TestClient,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from breadcrumb.stores.sql import browse as sql_browse

    h = _h(http, "u1", "reader")
    every = {m["id"] for m in _all_pages(http, h, text="rename the HELPER")}
    assert len(every) == 7  # the seven task sessions
    monkeypatch.setattr(sql_browse, "TEXT_WINDOW", 3)  # a page reads 3 rows at most
    pages: list[list[str]] = []
    cursor = None
    while True:
        got = http.get("/v1/memories", headers=h, params={
            "text": "rename the helper", "limit": 2, **({"cursor": cursor} if cursor else {})})
        assert got.status_code == 200
        pages.append([m["id"] for m in got.json()["memories"]])
        cursor = got.json()["next_cursor"]
        if cursor is None:
            break
    found = [i for page in pages for i in page]
    assert sorted(found) == sorted(every) and len(found) == len(set(found))
    assert all(len(page) <= 2 for page in pages) and len(pages) > 4


def test_a_letter_the_processors_gave_up_on_is_applied_again(tmp_path: Path) -> None:
    with hash_client(tmp_path) as http:
        runtime = http.app.state.runtime
        real = runtime.embedder.embed_passages

        def embed(texts: list[str]) -> Any:  # fails on one session's text, every time
            if any("poison-pill" in t for t in texts):
                raise RuntimeError("embedder exploded")
            return real(texts)

        runtime.embedder.embed_passages = embed
        events = [event("u1", "poisoned", 0, "message", "a poison-pill message", 3),
                  event("u1", "poisoned", 1, "session_end", "end", 3)]
        assert http.post("/v1/events", json={"events": events}).status_code == 202
        wait_until(lambda: any(x["source"] == "processor" for x in http.get(
            "/v1/dead_letters").json()["dead_letters"]), timeout=120)
        letter = [x for x in http.get("/v1/dead_letters").json()["dead_letters"]
                  if x["source"] == "processor"][0]
        assert letter["position"].startswith("log:") and "exploded" in letter["reason"]
        still = http.post(f"/v1/dead_letters/{letter['id']}/redrive", json={})
        assert still.status_code == 409 and "exploded" in still.json()["error"]["message"]
        runtime.embedder.embed_passages = real  # the fix
        done = http.post(f"/v1/dead_letters/{letter['id']}/redrive", json={})
        assert done.status_code == 200 and done.json()["outcome"] == "applied", done.text
        wait_until(lambda: http.get("/v1/memories", params={
            "user_id": "u1", "thread": "poisoned"}).json()["memories"] != [], timeout=60)

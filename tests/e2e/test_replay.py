"""Replay: rebuild the derived stores into a new generation while queries keep working."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.infra.embedded import replay
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.generations.embedded import GenerationCatalog
from tests.conftest import example_events, wait_until
from tests.support.clients import drain, hash_client


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    with hash_client(tmp_path) as http:
        yield http


def _memory_ids(client: TestClient) -> list[tuple[str, str, int, int]]:
    store = client.app.state.runtime.derived_store()  # type: ignore[attr-defined]
    rows = store.memories.list_memories("demo", 1000, 0)
    return sorted((m.id, m.source_range.thread_id, m.source_range.start_index,
                   m.source_range.end_index) for m in rows)


def test_replay_switches_generation_without_failing_queries(client: TestClient) -> None:
    events = example_events()
    client.post("/v1/events", json={"events": events})
    drain(client, timeout=60)
    before = _memory_ids(client)
    failures: list[Any] = []
    answers = 0
    stop = threading.Event()

    def query_loop() -> None:
        nonlocal answers
        while not stop.is_set():
            r = client.post("/v1/recall", json={"user_id": "demo", "query": "email regex"})
            if r.status_code != 200 or not r.json()["memories"]:
                failures.append((r.status_code, r.text[:200]))
            answers += 1

    worker = threading.Thread(target=query_loop)
    worker.start()
    try:
        assert client.post("/v1/admin/replay", json={"name": "g1"}).status_code == 202
        wait_until(lambda: client.get("/v1/admin/replay").json()["state"] in ("done", "failed"),
                   timeout=120)
    finally:
        stop.set()
        worker.join(30)
    status = client.get("/v1/admin/replay").json()
    assert status["state"] == "done", status
    assert status["applied"] == len(events)
    assert failures == [] and answers > 0
    assert client.get("/v1/stats").json()["generation"] == "g1"
    assert _memory_ids(client) == before  # same ids and ranges from the same log
    taken = client.post("/v1/admin/replay", json={"name": "g1"})
    assert taken.status_code == 409 and "exists" in taken.json()["error"]["message"]

    more = [{**e, "event_id": e["event_id"] + "-later", "thread_id": "after-switch"}
            for e in events[:5]]
    client.post("/v1/events", json={"events": more})
    client.post("/v1/flush", json={"user_id": "demo", "thread_id": "after-switch"})
    drain(client, timeout=60)
    assert any(m[1] == "after-switch" for m in _memory_ids(client))

    # old generations are removed by command, never the current one
    assert client.delete("/v1/admin/generations/g1").status_code == 409
    removed = client.delete("/v1/admin/generations/main")
    assert removed.status_code == 409 and "cannot be removed" in removed.text
    assert client.post("/v1/admin/replay", json={"name": "g2"}).status_code == 202
    wait_until(lambda: client.get("/v1/admin/replay").json()["state"] == "done", timeout=120)
    assert client.delete("/v1/admin/generations/g1").json() == {"removed": "g1"}
    listed = client.get("/v1/admin/generations").json()
    assert listed["current"] == "g2" and set(listed["generations"]) == {"main", "g2"}
    data_dir = client.app.state.runtime.settings.data_dir  # type: ignore[attr-defined]
    assert not (data_dir / "generations" / "g1").exists()
    assert _memory_ids(client)  # still answering from g2


def test_replay_with_another_embedder_is_idempotent_in_ids(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    runtime = build_runtime(settings, embedder=HashEmbedder(dim=64))
    try:
        runtime.gateway.submit(example_events(), "test")
        runtime.gateway.wait_processed(120)
        before = sorted(m.id for m in runtime.memories.list_memories("demo", 100, 0))
        progress = replay(runtime, "g32", embedder=HashEmbedder(dim=32))
        assert progress.state == "done"
        after = sorted(m.id for m in runtime.memories.list_memories("demo", 100, 0))
        assert after == before
        assert runtime.index.count()["memories"] == len(before)
    finally:
        runtime.stop()
    catalog = GenerationCatalog(settings.data_dir)
    assert catalog.current() == "g32"
    catalog.switch("main")
    catalog.remove("g32")
    assert catalog.names() == ["main"]

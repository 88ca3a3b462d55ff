"""Replay failure paths: one bad entry never stops a replay; a replay killed mid-way leaves
its generation failed and removable; removing an unknown generation is a 404."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.app import create_app
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.generations.embedded import GenerationCatalog
from breadcrumb.streams.embedded.replay import abandoned_builds
from tests.conftest import example_events, wait_until
from tests.support.clients import drain


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def _client(data_dir: Path) -> TestClient:
    runtime = build_runtime(Settings(data_dir=data_dir), embedder=HashEmbedder())
    return TestClient(create_app(runtime))


@pytest.fixture()
def client(data_dir: Path) -> Iterator[TestClient]:
    with _client(data_dir) as http:
        yield http


def test_deleting_an_unknown_generation_is_404(client: TestClient) -> None:
    r = client.delete("/v1/admin/generations/nope")
    assert r.status_code == 404 and r.json()["error"]["code"] == "generation_not_found"


def test_a_killed_replay_leaves_a_failed_generation_that_can_be_removed(
        data_dir: Path) -> None:
    with _client(data_dir):
        pass
    # what a replay killed before its switch leaves behind
    GenerationCatalog(data_dir).create("g-killed", {"created_at": datetime.now(UTC).isoformat()})
    with _client(data_dir) as http:
        state = http.get("/v1/admin/generations").json()["generations"]["g-killed"]
        assert state["state"] == "failed" and "replay stopped" in state["error"]
        assert http.delete("/v1/admin/generations/g-killed").status_code == 200
        assert "g-killed" not in http.get("/v1/admin/generations").json()["generations"]


def test_one_entry_that_always_fails_does_not_stop_the_replay(client: TestClient) -> None:
    events = example_events()
    client.post("/v1/events", json={"events": events})
    drain(client, timeout=60)
    runtime: Any = client.app.state.runtime  # type: ignore[attr-defined]
    poison = events[3]["event_id"]
    real = runtime.embedder.embed_passages

    def embed(texts: list[str]) -> Any:  # a processor that raises on one entry, every time
        if any(poison in t for t in texts) or any("bob@@example.com" in t for t in texts):
            raise RuntimeError("embedder exploded")
        return real(texts)
    runtime.embedder.embed_passages = embed
    assert client.post("/v1/admin/replay", json={"name": "g1"}).status_code == 202
    wait_until(lambda: client.get("/v1/admin/replay").json()["state"] in ("done", "failed"),
               timeout=120)
    done = client.get("/v1/admin/replay").json()
    assert done["state"] == "done", done
    assert client.get("/v1/admin/generations").json()["current"] == "g1"
    letters = runtime.derived_store().dead_letters.dead_letter_positions()
    assert letters and all(pos.startswith("log:") for pos, _r, _p in letters)
    assert all("embedder exploded" in reason for _pos, reason, _p in letters)


def test_abandoned_builds_by_heartbeat() -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    old = (now - timedelta(seconds=300)).isoformat()
    fresh = (now - timedelta(seconds=10)).isoformat()
    gens = {"main": {"state": "current"},
            "a": {"state": "building", "created_at": old},
            "b": {"state": "building", "created_at": old, "heartbeat_at": fresh},
            "c": {"state": "building", "created_at": None},
            "d": {"state": "failed", "created_at": old}}
    assert abandoned_builds(gens, now, 120) == ["a", "c"]

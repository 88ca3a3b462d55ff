"""``/readyz`` (issue 13): ready on a healthy runtime, 503 naming the failed check when the
disk is low, table pages are corrupt, the store refuses writes, the vector index is
broken, or the processor is dead or stuck — while ``/healthz`` stays liveness."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.app import create_app
from breadcrumb.query_api.routes.health import Readiness
from breadcrumb.settings import Settings
from breadcrumb.stores.data_dir import MB
from tests.conftest import example_events, wait_until
from tests.support.clients import drain

CHECKS = {"sql_write", "sql_integrity", "processor", "vectors", "disk"}


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", embedder="hash",
                        ready_integrity_seconds=0, ready_stall_seconds=30)
    runtime = build_runtime(settings)
    with TestClient(create_app(runtime)) as http:
        response = http.post("/v1/events", json={"events": example_events()})
        assert response.status_code == 202
        http.post("/v1/flush", json={"user_id": "demo", "thread_id": "auth-refactor"})
        drain(http, timeout=120)
        yield http


def _ready(client: TestClient) -> tuple[int, dict[str, Any]]:
    response = client.get("/readyz")
    return response.status_code, response.json()


def test_ready_when_healthy(client: TestClient) -> None:
    code, body = _ready(client)
    assert code == 200, body
    assert body["status"] == "ready" and body["failed"] == []
    assert {c["name"] for c in body["checks"]} == CHECKS
    assert all(c["ok"] and c["detail"] == "ok" for c in body["checks"])


def test_low_disk_fails_disk(client: TestClient) -> None:
    client.app.state.readiness = Readiness(client.app.state.runtime,  # type: ignore[attr-defined]
                                           free_space=lambda _: 100 * MB)
    code, body = _ready(client)
    assert code == 503 and body["failed"] == ["disk"]
    assert "100 MB free" in next(c["detail"] for c in body["checks"] if c["name"] == "disk")
    assert client.get("/healthz").status_code == 200  # liveness is not readiness
    received = client.get("/v1/stats").json()["events_received"]
    refused = client.post("/v1/events", json={"events": [
        {**example_events()[0], "event_id": "low-disk", "thread_id": "low-disk"}]})
    assert refused.status_code == 507
    assert refused.json()["error"]["code"] == "insufficient_storage"
    assert client.post("/v1/flush", json={"user_id": "demo", "thread_id": "x"}
                       ).status_code == 507
    assert client.get("/v1/stats").json()["events_received"] == received  # nothing taken


def test_store_refusing_writes_fails_sql_write(client: TestClient) -> None:
    store = client.app.state.runtime.derived_store()  # type: ignore[attr-defined]
    store.db._conn.execute("PRAGMA query_only = 1")  # the file can no longer be written
    try:
        code, body = _ready(client)
        assert code == 503 and "sql_write" in body["failed"]
    finally:
        store.db._conn.execute("PRAGMA query_only = 0")
    assert _ready(client)[0] == 200


def test_corrupt_table_pages_fail_sql_integrity(client: TestClient) -> None:
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    store = runtime.derived_store()
    path = store.path
    store.db.read("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the main file
    with sqlite3.connect(path) as db:
        page = db.execute("PRAGMA page_size").fetchone()[0]
        root = db.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'raw_events'"
                          ).fetchone()[0]
    with path.open("r+b") as f:  # garbage over the raw events table's first pages
        f.seek(page * (root - 1))
        f.write(b"\xa5" * page * 2)
    code, body = _ready(client)
    assert code == 503 and "sql_integrity" in body["failed"], body


def test_broken_vector_index_fails_vectors(client: TestClient) -> None:
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    shutil.rmtree(runtime.settings.data_dir / "vectors" / "memories" / "segments")
    code, body = _ready(client)
    assert code == 503 and body["failed"] == ["vectors"]
    assert "segment" in next(c["detail"] for c in body["checks"] if c["name"] == "vectors")


def test_dead_processor_fails_processor(client: TestClient) -> None:
    client.app.state.runtime.gateway.stop()  # type: ignore[attr-defined]
    code, body = _ready(client)
    assert code == 503 and body["failed"] == ["processor"]
    assert "not running" in body["checks"][2]["detail"]


def test_stuck_processor_fails_processor(client: TestClient) -> None:
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    now = [1000.0]
    client.app.state.readiness = Readiness(runtime, clock=lambda: now[0])  # type: ignore
    runner = runtime.gateway
    with runner.paused():  # the processor cannot apply anything while this is held
        events = [{**e, "event_id": f"stuck-{i}", "thread_id": "stuck"}
                  for i, e in enumerate(example_events())]
        assert client.post("/v1/events", json={"events": events}).status_code == 202
        assert _ready(client)[0] == 200  # a backlog alone is not stuck
        now[0] += 29
        assert _ready(client)[0] == 200
        now[0] += 2
        code, body = _ready(client)
        assert code == 503 and body["failed"] == ["processor"]
        assert "stuck" in body["checks"][2]["detail"]
    wait_until(lambda: runner.unprocessed() == 0, timeout=120)
    assert _ready(client)[0] == 200

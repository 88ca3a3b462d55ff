"""Issue 12 in cluster mode: two tenants whose old ``{user}/{thread}`` keys collide go
through Kafka and the Faust table without touching each other; ids with ``/`` read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from breadcrumb.infra.cluster import build_sql_store
from tests.conftest import wait_until
from tests.integration.conftest import (
    cluster_settings,
    drop_database,
    start_worker,
    stop_worker,
    wait_api,
)

pytestmark = pytest.mark.integration
TENANTS = [("acme/x", "y"), ("acme", "x/y")]


def _events(user: str, thread: str) -> list[dict[str, Any]]:
    return [{"event_id": f"e{i}", "user_id": user, "thread_id": thread,
             "ts": f"2026-01-01T00:00:0{i}Z", "role": "user", "kind": "message",
             "content": f"{user} says {i} in {thread}"} for i in range(3)]


def test_colliding_tenants_over_kafka(tmp_path: Path) -> None:
    settings = cluster_settings(tmp_path)
    build_sql_store(settings).close()
    log = tmp_path / "worker.log"
    worker = start_worker(settings, log, "--serve-api")
    url = f"http://127.0.0.1:{settings.port}"
    try:
        wait_api(worker, log, url)
        for user, thread in TENANTS:
            posted = httpx.post(f"{url}/v1/events", json={"events": _events(user, thread)},
                                timeout=60)
            assert posted.status_code == 202 and posted.json()["accepted"] == 3, posted.text
            assert httpx.post(f"{url}/v1/flush", json={"user_id": user, "thread_id": thread},
                              timeout=60).status_code == 202
        wait_until(lambda: httpx.get(f"{url}/v1/stats").json()["pending"] == 0, timeout=180,
                   interval=0.5)
        stats = httpx.get(f"{url}/v1/stats").json()
        assert stats["dead_letters"] == 0, stats
        for user, thread in TENANTS:
            got = httpx.get(f"{url}/v1/threads/{thread.replace('/', '%2F')}/events",
                            params={"user_id": user}, timeout=30)
            assert got.status_code == 200, got.text
            assert [e["content"] for e in got.json()] == [
                f"{user} says {i} in {thread}" for i in range(3)]
            recall = httpx.post(f"{url}/v1/recall", json={
                "user_id": user, "query": "says", "thread_id": thread}, timeout=60).json()
            assert {m["source_range"]["thread_id"] for m in recall["memories"]} == {thread}
    finally:
        stop_worker(worker)
        drop_database(settings.mysql_database)

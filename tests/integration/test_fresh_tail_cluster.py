"""Cluster fresh tail: HTTP → Kafka → Faust (window still open) → recall from MySQL at once.

The worker keeps thread state in its Faust table and mirrors it to SQL; recall reads the
open windows of the asking tenant from there and the raw events from MySQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
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


def _events(user: str, port: str) -> list[dict[str, Any]]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = [("user", "message", "Point the app at pgbouncer."),
            ("assistant", "file_edit", f"-DB_PORT=5432\n+DB_PORT={port}")]
    return [{"event_id": f"{user}-live-{i}", "user_id": user, "thread_id": "live", "ts": now,
             "role": role, "kind": kind, "content": content}
            for i, (role, kind, content) in enumerate(rows)]


def test_open_window_recalled_in_cluster_mode(tmp_path: Path) -> None:
    settings = cluster_settings(tmp_path, idle_flush_seconds=600)  # windows stay open
    build_sql_store(settings).close()
    log = tmp_path / "worker.log"
    worker = start_worker(settings, log, "--serve-api")
    url = f"http://127.0.0.1:{settings.port}"
    try:
        wait_api(worker, log, url)
        events = _events("u1", "6432") + _events("u2", "7777")
        posted = httpx.post(f"{url}/v1/events", json={"events": events}, timeout=60)
        assert posted.status_code == 202 and posted.json()["accepted"] == 4
        # processed into the open windows (4 events pending), no memory yet
        wait_until(lambda: httpx.get(f"{url}/v1/stats").json()["consumer_lag"] == 0
                   and httpx.get(f"{url}/v1/stats").json()["pending"] == 4, timeout=180,
                   interval=0.5)
        query = {"user_id": "u1", "query": "What is DB_PORT now?"}
        answer = httpx.post(f"{url}/v1/recall", json=query, timeout=60).json()
        assert answer["memories"] == []
        first = answer["evidence"][0]
        assert first["extracted_text"] == "+DB_PORT=6432"
        assert first["matched_event_ids"] == ["u1-live-1"]
        assert (first["source_thread_id"], first["source_start_index"],
                first["source_end_index"]) == ("live", 0, 1)
        assert first["observed"] is False and first["status"] == "open_window"
        assert "7777" not in "\n".join(e["extracted_text"] for e in answer["evidence"])
    finally:
        stop_worker(worker)
        drop_database(settings.mysql_database)

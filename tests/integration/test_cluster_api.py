"""Cluster mode over HTTP: POST /v1/events → Kafka → Faust → MySQL + Qdrant → recall."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from breadcrumb.infra.cluster import build_sql_store
from tests.conftest import example_events, wait_until
from tests.integration.conftest import (
    cluster_settings,
    drop_database,
    start_worker,
    stop_worker,
    wait_api,
)

pytestmark = pytest.mark.integration


def test_http_to_kafka_to_recall(tmp_path: Path) -> None:
    settings = cluster_settings(tmp_path)
    store = build_sql_store(settings)
    store.close()
    log = tmp_path / "worker.log"
    worker = start_worker(settings, log, "--serve-api")
    url = f"http://127.0.0.1:{settings.port}"
    try:
        wait_api(worker, log, url)
        health = httpx.get(f"{url}/healthz").json()
        assert health["mode"] == "cluster" and health["status"] == "ok"

        events = example_events()
        posted = httpx.post(f"{url}/v1/events", json={"events": events}, timeout=60)
        assert posted.status_code == 202 and posted.json()["accepted"] == len(events)
        bad = httpx.post(f"{url}/v1/events", json={"events": [{**events[0], "ts": "never"}]})
        assert bad.status_code == 422 and "'ts'" in bad.json()["error"]["message"]

        wait_until(lambda: httpx.get(f"{url}/v1/stats").json()["pending"] == 0, timeout=180,
                   interval=0.5)
        stats = httpx.get(f"{url}/v1/stats").json()
        assert stats["consumer_lag"] == 0 and stats["dead_letters"] == 1
        assert stats["memories"]["by_status"]["active"] >= 2

        query = {"user_id": "demo", "query": "which image tag is shop-api pinned to?"}
        answer = httpx.post(f"{url}/v1/recall", json=query, timeout=60).json()
        assert answer["memories"][0]["source_range"]["thread_id"] == "deploy-pipeline"
        assert "ghcr.io/acme/shop-api:2.14.3" in "\n".join(
            e["extracted_text"] for e in answer["evidence"])
    finally:
        stop_worker(worker)
        drop_database(settings.mysql_database)

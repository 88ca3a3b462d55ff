"""Recall in time in cluster mode: POST /v1/events -> Kafka -> Faust -> MariaDB + Qdrant,
then ``as_of`` answers as things stood then, before and after a replay into a new
generation (a new consumer group re-reading the topic into a new database)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from breadcrumb.stores.generations.cluster import generation_settings
from tests.conftest import wait_until
from tests.e2e.test_recall_as_of import check_in_time, history
from tests.integration.conftest import (
    cluster_settings,
    drop_database,
    start_worker,
    stop_worker,
    wait_api,
)

pytestmark = pytest.mark.integration


def test_as_of_on_mariadb_and_after_a_replay(tmp_path: Path) -> None:
    settings = cluster_settings(tmp_path)
    log = tmp_path / "worker.log"
    worker = start_worker(settings, log, "--serve-api")
    url = f"http://127.0.0.1:{settings.port}"
    new_db = generation_settings(settings, "g2").mysql_database
    try:
        wait_api(worker, log, url)
        with httpx.Client(base_url=url, timeout=60) as http:
            assert http.post("/v1/events", json={"events": history()}).status_code == 202
            wait_until(lambda: http.get("/v1/stats").json()["pending"] == 0, timeout=180,
                       interval=0.5)
            check_in_time(http)
            bad = http.post("/v1/recall", json={"user_id": "u1", "query": "port?",
                                                "as_of": "2026-02-30T00:00:00Z"})
            assert bad.status_code == 422 and "as_of" in bad.json()["error"]["message"]

            assert http.post("/v1/admin/replay", json={"name": "g2"}).status_code == 202

            def finished() -> bool:
                state = http.get("/v1/admin/replay").json()["state"]
                assert state != "failed", log.read_text()[-4000:]
                return bool(state == "done")
            wait_until(finished, timeout=120, interval=0.5)
            assert http.get("/v1/stats").json()["generation"] == "g2"
            check_in_time(http)
    finally:
        stop_worker(worker)
        drop_database(new_db)
        drop_database(settings.mysql_database)

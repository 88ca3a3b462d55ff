"""The explorer's routes (issue 47) in cluster mode over HTTP: events → Kafka → Faust →
MariaDB, then the same assertions as tests/e2e/test_dashboard_explore_api.py (embedded
SQLite) on ``worker --serve-api`` — a fact's history with the event that said each value,
fact keys, threads by last event in keyset pages, the thread header and its 404 — plus
the tenant list of a keyless service."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from breadcrumb.infra.cluster import build_sql_store
from tests.conftest import wait_until
from tests.e2e import test_dashboard_explore_api as embedded
from tests.integration.conftest import (
    cluster_settings,
    drop_database,
    start_worker,
    stop_worker,
    wait_api,
)
from tests.support.memview import changed_value, small_sessions

pytestmark = pytest.mark.integration


def test_explorer_routes_on_mysql(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BREADCRUMB_EMBEDDER", "hash")  # the SQL, not the model
    settings = cluster_settings(tmp_path, embedder="hash")
    build_sql_store(settings).close()
    log = tmp_path / "worker.log"
    worker = start_worker(settings, log, "--serve-api")
    url = f"http://127.0.0.1:{settings.port}"
    try:
        wait_api(worker, log, url)
        events = changed_value("u1") + embedded.moved_again("u1") + small_sessions("u1", 2)
        events += changed_value("u2")
        with httpx.Client(base_url=url, timeout=60) as http:
            assert http.post("/v1/events", json={"events": events}).status_code == 202

            def derived() -> bool:
                stats = http.get("/v1/stats").json()
                return bool(stats["pending"] == 0 and stats["consumer_lag"] == 0
                            and sum(stats["memories"]["by_status"].values()) >= 7)
            wait_until(derived, timeout=240, interval=1.0)

            tenants = http.get("/v1/dashboard/tenants").json()
            assert {t["tenant"] for t in tenants["tenants"]} == {"u1", "u2"}
            assert tenants["tenants"][0] == {"tenant": "u1", "events": 15, "memories": 5,
                                             "last_ts": "2026-11-15T10:02:00Z"}
            assert tenants["default"] == "local" and tenants["all"] is True
            embedded.test_fact_history_every_value_where_and_which_is_current(http)  # type: ignore[arg-type]
            embedded.test_threads_by_last_event_with_titles_and_404(http)  # type: ignore[arg-type]
            lower = http.get("/v1/facts", params={"user_id": "u1", "q": "db_port"}).json()
            assert "env:DB_PORT" in [f["key"] for f in lower["facts"]]
            assert all("db_port" in f["key"].lower() for f in lower["facts"])
            assert http.get("/v1/facts", params={"user_id": "u1", "q": "DB!_"}).json() == {
                "facts": []}
    finally:
        stop_worker(worker)
        drop_database(settings.mysql_database)

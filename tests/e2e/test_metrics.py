"""Prometheus ``/metrics``, the dashboard's SSE stream and snapshot, JSON logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from breadcrumb.query_api.telemetry import JsonFormatter, Telemetry
from tests.conftest import ROOT, example_events, wait_until
from tests.support.clients import drain, hash_client

SNAPSHOT_KEYS = {"at", "stats", "rates", "history", "recalls", "stats_errors"}


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    with hash_client(tmp_path) as http:
        yield http


def _ingest(client: TestClient) -> None:
    assert client.post("/v1/events", json={"events": example_events()}).status_code == 202
    drain(client, timeout=30)


def _metrics(client: TestClient) -> dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    out: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for family in text_string_to_metric_families(response.text):
        samples = out.setdefault(family.name, {})
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _value(metrics: dict[str, Any], family: str, sample: str, **labels: str) -> float:
    value: float = metrics[family][(sample, tuple(sorted(labels.items())))]
    return value


def test_metrics_carry_the_pipeline_figures(client: TestClient) -> None:
    before = _metrics(client)
    assert _value(before, "breadcrumb_events_received", "breadcrumb_events_received_total") == 0
    _ingest(client)
    bad = {**example_events()[0], "event_id": "bad-1", "role": "robot"}
    assert client.post("/v1/events", json={"events": [bad]}).status_code == 422
    stats = client.get("/v1/stats").json()
    m = _metrics(client)
    assert _value(m, "breadcrumb_events_received", "breadcrumb_events_received_total") == 32
    assert _value(m, "breadcrumb_events_processed", "breadcrumb_events_processed_total") == 31
    assert _value(m, "breadcrumb_pending", "breadcrumb_pending") == 0
    assert _value(m, "breadcrumb_consumer_lag", "breadcrumb_consumer_lag") == 0
    assert _value(m, "breadcrumb_dead_letters", "breadcrumb_dead_letters") == 1
    assert _value(m, "breadcrumb_stats_up", "breadcrumb_stats_up") == 1
    active = stats["memories"]["by_status"]["active"]
    assert active >= 1
    assert _value(m, "breadcrumb_memories_by_status", "breadcrumb_memories_by_status",
                  status="active") == active
    by_tier = {k[1][0][1]: v for k, v in m["breadcrumb_memories_by_tier"].items()}
    assert by_tier == stats["memories"]["by_tier"]
    assert "breadcrumb_recall_latency_seconds" in m and "breadcrumb_recalls" in m


def test_recalls_are_counted_by_classification_and_level(client: TestClient) -> None:
    _ingest(client)
    for query in ("the exact email regex we decided for sign-up",
                  "summarize what we did on the deploy pipeline"):
        answer = client.post("/v1/recall", json={"user_id": "demo", "query": query})
        assert answer.status_code == 200
    m = _metrics(client)
    assert m["breadcrumb_recalls"], (
        "no recall was recorded: query_api/app.py post_recall must call "
        "telemetry_of(app).record_recall(response, req.user_id) (issue 7)")
    total = sum(v for (name, _), v in m["breadcrumb_recalls"].items()
                if name == "breadcrumb_recalls_total")
    assert total == 2
    assert _value(m, "breadcrumb_recalls", "breadcrumb_recalls_total",
                  classification="summary_ok", level="0") == 1
    assert _value(m, "breadcrumb_recall_latency_seconds",
                  "breadcrumb_recall_latency_seconds_count") == 2
    for stage in ("analyze", "retrieve", "decide", "recall", "extract", "respond"):
        assert _value(m, "breadcrumb_recall_stage_seconds",
                      "breadcrumb_recall_stage_seconds_count", stage=stage) == 2
    recent = client.get("/v1/dashboard/snapshot").json()["recalls"]["recent"]
    assert [r["classification"] for r in recent] == ["summary_ok", "exact_value_needed"]
    assert all(r["user_id"] == "demo" and r["latency_ms"] > 0 for r in recent)


def _sse_messages(client: TestClient, url: str) -> list[tuple[str, dict[str, Any]]]:
    with client.stream("GET", url) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        body = response.read().decode()
    assert body.startswith("retry: ")
    messages = []
    for frame in body.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in frame.splitlines() if ": " in line)
        if "data" in fields:
            messages.append((fields.get("event", "message"), json.loads(fields["data"])))
    return messages


def test_sse_stream_sends_json_snapshots(client: TestClient) -> None:
    _ingest(client)
    messages = _sse_messages(client, "/v1/dashboard/stream?limit=3&interval=0.6")
    assert [kind for kind, _ in messages] == ["message"] * 3
    first, last = messages[0][1], messages[-1][1]
    assert set(first) == SNAPSHOT_KEYS
    assert first["stats"]["events_received"] == 31
    assert first["stats"]["memories"]["by_status"]["active"] >= 1
    assert set(first["rates"]) == {"events_in_per_s", "derived_per_s", "memories_per_s"}
    assert len(last["history"]) >= 2 and last["at"] >= first["at"]
    assert client.get("/v1/dashboard/stream?interval=0.01").status_code == 422


def test_stats_failure_is_an_error_frame_and_counted(client: TestClient) -> None:
    def broken() -> dict[str, Any]:
        raise RuntimeError("metadata store unreachable")

    app: Any = client.app
    app.state.telemetry = Telemetry(broken)
    messages = _sse_messages(client, "/v1/dashboard/stream?limit=1")
    assert messages == [("error", {"error": "metadata store unreachable", "stats_errors": 1})]
    m = _metrics(client)
    assert _value(m, "breadcrumb_stats_up", "breadcrumb_stats_up") == 0
    assert _value(m, "breadcrumb_stats_errors", "breadcrumb_stats_errors_total") == 2
    assert client.get("/v1/dashboard/snapshot").status_code == 503


def test_rates_are_deltas_over_the_window() -> None:
    now = [0.0]
    counts = {"events_received": 0, "events_processed": 0, "pending": 0,
              "memories": {"by_status": {"active": 0}}}
    telemetry = Telemetry(lambda: dict(counts), clock=lambda: now[0])
    assert telemetry.snapshot()["rates"]["events_in_per_s"] == 0
    now[0], counts["events_received"], counts["events_processed"] = 2.0, 40, 10
    snap = telemetry.snapshot()
    assert snap["rates"] == {"events_in_per_s": 20.0, "derived_per_s": 5.0, "memories_per_s": 0.0}
    now[0] = 2.1  # inside min_interval: the cached sample, no new stats read
    counts["events_received"] = 999
    assert telemetry.snapshot()["stats"]["events_received"] == 40
    now[0], counts["events_received"] = 10.0, 999
    assert telemetry.snapshot()["rates"]["events_in_per_s"] == round((999 - 40) / 8, 3)


def test_memories_by_status_and_tier_when_the_store_offers_the_grid(client: TestClient) -> None:
    runtime: Any = client.app.state.runtime  # type: ignore[attr-defined]
    runtime.memories = _GridStore(runtime.memories)
    m = _metrics(client)
    assert _value(m, "breadcrumb_memories", "breadcrumb_memories",
                  status="active", tier="confirmed") == 3


class _GridStore:
    """The real store plus the optional ``memory_counts_by_status_tier`` method."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def memory_counts_by_status_tier(self) -> list[tuple[str, str, int]]:
        return [("active", "confirmed", 3), ("superseded", "provisional", 1)]


def test_json_log_format_from_the_environment(tmp_path: Path) -> None:
    code = ("import logging; from breadcrumb.settings import Settings; "
            "from breadcrumb.query_api.telemetry import configure_logging; "
            "configure_logging(Settings()); "
            "logging.getLogger('bc.test').warning('ingested %d', 31, extra={'thread_id': 't1'})")
    env = {**os.environ, "BREADCRUMB_LOG_FORMAT": "json"}
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=60, check=True)
    record = json.loads(run.stderr.strip().splitlines()[-1])
    assert record["level"] == "WARNING" and record["logger"] == "bc.test"
    assert record["message"] == "ingested 31" and record["thread_id"] == "t1"
    assert record["ts"].endswith("+00:00")


def test_json_formatter_keeps_the_exception() -> None:
    import logging

    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.getLogger("x").makeRecord("x", logging.ERROR, "f", 1, "failed", (),
                                                   sys.exc_info())
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "failed" and "ValueError: boom" in line["exception"]


@pytest.mark.integration
def test_cluster_mode_metrics_and_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same figures from a real worker (Kafka + MariaDB) serving the API."""
    import httpx

    from tests.integration.conftest import (
        cluster_settings,
        drop_database,
        start_worker,
        stop_worker,
        wait_api,
    )

    monkeypatch.setenv("BREADCRUMB_EMBEDDER", "hash")
    settings = cluster_settings(tmp_path)
    log = tmp_path / "worker.log"
    worker = start_worker(settings, log, "--serve-api")
    url = f"http://127.0.0.1:{settings.port}"

    def get(path: str) -> httpx.Response:
        assert worker.poll() is None, log.read_text()[-3000:]
        return httpx.get(f"{url}{path}", timeout=10)

    try:
        wait_api(worker, log, url)
        events = example_events()
        assert httpx.post(f"{url}/v1/events", json={"events": events}, timeout=60).is_success
        wait_until(lambda: get("/v1/stats").json()["pending"] == 0, timeout=180, interval=0.5)
        families = {f.name: f for f in text_string_to_metric_families(get("/metrics").text)}
        received = families["breadcrumb_events_received"].samples[0].value
        assert received == len(events)
        assert families["breadcrumb_consumer_lag"].samples[0].value == 0
        assert families["breadcrumb_dead_letters"].samples[0].value == 0
        active = [s.value for s in families["breadcrumb_memories_by_status"].samples
                  if s.labels == {"status": "active"}]
        assert active and active[0] >= 1
        frame = next(line for line in get("/v1/dashboard/stream?limit=1").text.splitlines()
                     if line.startswith("data: "))
        snapshot = json.loads(frame.removeprefix("data: "))
        assert snapshot["stats"]["mode"] == "cluster"
        assert snapshot["stats"]["events_received"] == len(events)
    finally:
        stop_worker(worker)
        drop_database(settings.mysql_database)

"""Freshness (issue 14): event accepted → recallable, and → its memory written, as p50 /
p95 on ``/v1/stats``, ``/metrics`` and the dashboard (real embedded runtime, hash embedder)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from breadcrumb.streams.freshness import Freshness
from tests.conftest import example_events
from tests.support.clients import drain, hash_client


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    with hash_client(tmp_path) as http:
        yield http


def test_freshness_is_on_stats_metrics_and_the_dashboard(client: TestClient) -> None:
    before = client.get("/v1/stats").json()["freshness"]
    assert before["recallable_ms"] == {"p50": None, "p95": None, "samples": 0}
    events = example_events()
    assert client.post("/v1/events", json={"events": events}).status_code == 202
    drain(client, timeout=60)
    fresh = client.get("/v1/stats").json()["freshness"]
    recallable, memory = fresh["recallable_ms"], fresh["memory_ms"]
    assert fresh["measured"] == recallable["samples"] >= len(events)  # + flush markers
    assert 0 <= recallable["p50"] <= recallable["p95"] < 60_000
    assert 1 <= memory["samples"] < recallable["samples"]  # only entries closing a range
    assert 0 <= memory["p50"] <= memory["p95"] < 60_000

    text = client.get("/metrics").text
    family = next(f for f in text_string_to_metric_families(text)
                  if f.name == "breadcrumb_freshness_seconds")
    values = {(s.labels["stage"], s.labels["quantile"]): s.value for s in family.samples}
    assert values[("recallable", "0.95")] == pytest.approx(recallable["p95"] / 1000, abs=0.01)
    assert set(values) == {(st, q) for st in ("recallable", "memory") for q in ("0.5", "0.95")}

    snapshot = client.get("/v1/dashboard/snapshot").json()
    assert snapshot["stats"]["freshness"]["recallable_ms"]["samples"] >= len(events)
    page = client.get("/dashboard/assets/dashboard.js").text + client.get("/dashboard").text
    assert all(i in page for i in ("fresh-p50", "fresh-p95", "fresh-memory-p95", "freshness"))


def test_percentiles_over_the_ring_buffer() -> None:
    freshness = Freshness(size=100)
    freshness.record([i / 1000 for i in range(1, 201)], [0.5])  # the oldest 100 roll out
    summary = freshness.summary()
    assert summary["recallable_ms"] == {"p50": 151.0, "p95": 196.0, "samples": 100}
    assert summary["memory_ms"] == {"p50": 500.0, "p95": 500.0, "samples": 1}
    assert summary["measured"] == 200

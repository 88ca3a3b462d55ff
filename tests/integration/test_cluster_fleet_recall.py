"""Recall on the fleet's own events in cluster mode (issue 30): the cluster demo's
generator publishes to Kafka, ``breadcrumb worker`` (Faust) derives into MariaDB,
``breadcrumb serve`` answers "what default value did we give ENV in FUNC?" with the line
holding the value (see tests/e2e/test_fleet_recall.py for the embedded run)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from breadcrumb.query_api.recall.extract.superseded import holds_value
from tests.conftest import wait_until
from tests.integration.faults import publish_events
from tests.integration.test_cluster_quickstart import QuickStart
from tests.support.fleet import fleet_events, fleet_questions

pytestmark = pytest.mark.integration


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[QuickStart]:
    qs = QuickStart(tmp_path)
    try:
        yield qs
    finally:
        qs.close()


def test_the_demo_questions_find_their_values_through_worker_and_serve(
        cluster: QuickStart) -> None:
    worker = cluster.run(["worker"], "worker.log")
    serve = cluster.run(["serve"], "serve.log")
    cluster.wait_ready(worker, serve)
    events = fleet_events(seed=1, agents=8, steps=36, run_id=f"{cluster.tag}-seed1")
    assert publish_events(cluster.settings, events) == len(events)

    def drained() -> bool:
        stats = httpx.get(f"{cluster.url}/v1/stats", timeout=30).json()
        return int(stats["events_processed"]) >= len(events) and int(stats["pending"]) == 0
    wait_until(drained, timeout=600, interval=2.0)

    missed = []
    for asked in fleet_questions(events):
        answer = httpx.post(f"{cluster.url}/v1/recall",
                            json={"user_id": asked.user_id, "query": asked.query}, timeout=120)
        assert answer.status_code == 200, answer.text
        evidence = answer.json()["evidence"]
        text = "\n".join(e["extracted_text"] for e in evidence)
        if asked.current not in text:
            missed.append((asked.thread_id, asked.query, asked.current, text[:200]))
        elif asked.reset_later:
            for item in evidence:
                if holds_value(item["extracted_text"], asked.value):
                    assert asked.value in item.get("superseded_values", []), item
    assert not missed, f"{len(missed)} missed: {missed}"
    for name in ("worker.log", "serve.log"):
        assert "Traceback" not in cluster.log(name)

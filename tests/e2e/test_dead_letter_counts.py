"""Issue 30: one dead-letter count across ``/v1/stats``, ``/metrics`` and the dashboard,
poison not counted as processed, every byte of a letter recoverable (embedded mode)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import example_events
from tests.support.clients import drain, hash_client


def _metric(client: TestClient, name: str) -> float:
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    raise AssertionError(f"{name} not in /metrics")


def test_three_poison_events_count_the_same_everywhere(tmp_path: Path) -> None:
    good = example_events()
    base = {**good[0], "event_id": "p-1"}
    missing = {k: v for k, v in base.items() if k not in ("user_id", "thread_id", "ts")}
    poison: list[dict[str, Any]] = [
        missing,  # three required fields absent
        {**base, "event_id": "p-2", "kind": "telepathy"},
        {**base, "event_id": "p-3", "role": "robot"},
    ]
    with hash_client(tmp_path) as client:
        answer = client.post("/v1/events", json={"events": good + poison})
        assert answer.status_code == 202 and answer.json()["accepted"] == len(good)
        assert len(answer.json()["rejected"]) == len(poison)
        drain(client)
        stats = client.get("/v1/stats").json()
        assert stats["dead_letters"] == stats["dead_lettered"] == len(poison)
        assert stats["events_processed"] == len(good)  # the poison is not "processed"
        assert _metric(client, "breadcrumb_dead_lettered_total") == len(poison)
        assert _metric(client, "breadcrumb_dead_letters") == len(poison)
        dashboard = client.get("/v1/dashboard/snapshot").json()["stats"]
        assert dashboard["dead_letters"] == dashboard["dead_lettered"] == len(poison)

        letters = client.app.state.runtime.dead_letters.list_dead_letters(10)  # type: ignore[attr-defined]
        kept = [orjson.loads(x.original_bytes()) for x in letters]
        assert sorted(kept, key=orjson.dumps) == sorted(poison, key=orjson.dumps)  # all of it
        reason = next(x.reason for x in letters if "event_id" in x.payload
                      and "p-1" in x.payload)
        for name in ("thread_id", "ts", "user_id"):
            assert f"'{name}'" in reason, reason  # every missing field named

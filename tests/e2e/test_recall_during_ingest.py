"""Recall while the embedded runner derives a burst (real SQLite + Qdrant Edge, hash
embedder): every answer is a 200 and every memory it names is stored. Reads see the
committed state beside the writer (stores/sql/sqlite/readers.py) while the vectors of a batch
are written before it commits, so a recall meets index hits whose memories SQL does not
hold yet; that once answered a 500."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

from fastapi.testclient import TestClient

from breadcrumb.commands.fleet import SimulatedAgent
from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.app import create_app
from breadcrumb.settings import Settings
from tests.conftest import wait_until

QUERIES = ("which test failed", "the email regex", "what port does the db use",
           "summarize the work")


def processed(http: TestClient) -> int:
    return int(http.get("/v1/stats").json()["events_processed"])


def test_recalls_during_a_derivation_burst_all_answer(tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    agents = [SimulatedAgent(n, run, 7, users=1) for n in range(30)]
    events = [agents[i % 30].next_event() for i in range(3000)]
    user = events[0]["user_id"]
    runtime = build_runtime(Settings(data_dir=tmp_path / "data", embedder="hash"))
    with TestClient(create_app(runtime)) as http:
        assert http.post("/v1/events", json={"events": events[:500]}).status_code == 202
        wait_until(lambda: processed(http) >= 500, timeout=120)
        failures: list[str] = []

        def post_rest() -> None:
            for start in range(500, len(events), 250):
                reply = http.post("/v1/events", json={"events": events[start:start + 250]})
                if reply.status_code != 202:
                    failures.append(f"events: {reply.status_code} {reply.text[:200]}")

        poster = threading.Thread(target=post_rest)
        poster.start()
        answered = 0
        while poster.is_alive() or processed(http) < len(events):
            for query in QUERIES:
                reply = http.post("/v1/recall", json={"user_id": user, "query": query,
                                                      "mode": "source"})
                if reply.status_code != 200:
                    failures.append(f"recall: {reply.status_code} {reply.text[:200]}")
                    continue
                answered += 1
                named = [m["id"] for m in reply.json()["memories"]]
                stored = {m.id for m in runtime.memories.get_memories(user, named)}
                if set(named) - stored:
                    failures.append(f"recall named unstored memories {set(named) - stored}")
        poster.join()
        assert failures == []
        assert answered >= 8  # recalls ran during the burst, not only after it

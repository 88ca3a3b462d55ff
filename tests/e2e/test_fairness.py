"""Fairness (issue 14): one tenant's 50 MB batch does not hold another tenant's event.

The real embedded server (``breadcrumb serve``, SQLite + Qdrant Edge, hash embedder) gets
50 MB of coding events from tenant ``bulk`` (several requests under the 32 MB body limit),
then ONE event from tenant ``solo``. That event must be recallable (its verbatim line, via
``POST /v1/recall``) within 5 s, while most of the bulk batch is still waiting: under
strict log order it would come after every bulk entry.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.serve import serving

BULK_BYTES = 50_000_000
PER_EVENT = 5_000  # characters of content per bulk event
PER_REQUEST = 2_000  # events per POST (10 MB bodies)


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[str]:
    with serving(tmp_path) as url:
        yield url


def _bulk_events() -> list[dict[str, Any]]:
    out = []
    n = BULK_BYTES // PER_EVENT
    for i in range(n):
        thread = f"build-{i % 20}"
        lines = [f"step {i}: compiling module_{i % 97}.py line {j} ok value_{i}_{j}"
                 for j in range(PER_EVENT // 40)]
        out.append({"event_id": f"bulk-{i}", "user_id": "bulk", "thread_id": thread,
                    "ts": "2026-11-30T10:00:00Z", "role": "tool", "kind": "tool_result",
                    "content": "\n".join(lines)[:PER_EVENT]})
    return out


def test_a_huge_batch_of_one_tenant_does_not_delay_another_tenants_event(server: str) -> None:
    events = _bulk_events()
    assert sum(len(e["content"]) for e in events) >= BULK_BYTES
    with httpx.Client(base_url=server, timeout=120) as http:
        for start in range(0, len(events), PER_REQUEST):
            reply = http.post("/v1/events", json={"events": events[start:start + PER_REQUEST]})
            assert reply.status_code == 202, reply.text
        solo = {"event_id": "solo-1", "user_id": "solo", "thread_id": "ops",
                "ts": "2026-11-30T10:05:00Z", "role": "assistant", "kind": "message",
                "content": "The staging database password rotation token is ROTATE-4471."}
        posted = time.monotonic()
        assert http.post("/v1/events", json={"events": [solo]}).status_code == 202
        deadline = posted + 5.0
        found = False
        while time.monotonic() < deadline:
            answer = http.post("/v1/recall", json={
                "user_id": "solo", "query": "What is the rotation token?"}).json()
            text = "\n".join(e["extracted_text"] for e in answer.get("evidence", []))
            if "ROTATE-4471" in text:
                found = True
                break
            time.sleep(0.1)
        waited = time.monotonic() - posted
        backlog = http.get("/v1/stats").json()["unprocessed"]
        print(f"fairness: solo recallable after {waited:.2f} s, bulk backlog {backlog}")
        assert found, f"solo's event not recallable after {waited:.1f} s (backlog {backlog})"
        # under strict log order solo's event (the log's last) would wait for all of these
        assert backlog > len(events) // 4, (waited, backlog)
        assert "bulk" not in text and "compiling" not in text  # tenants never mix

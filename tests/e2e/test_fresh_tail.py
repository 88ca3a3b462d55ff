"""Fresh tail: events of an open window are recallable at once, before any memory exists.

Real embedded runtime (SQLite + Qdrant Edge, the processor thread running); no flush,
no ``session_end``: the windows stay open. Then the window is closed and the memory
takes over without duplicating the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.infra.bootstrap import Runtime, build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from tests.conftest import wait_until


def _events(user: str, thread: str, port: str) -> list[dict[str, Any]]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = [
        ("user", "message", "Route the app through pgbouncer, we hit too many connections."),
        ("assistant", "file_edit", f"--- a/.env\n+++ b/.env\n@@ -1 +1 @@\n-DB_PORT=5432\n"
                                   f"+DB_PORT={port}"),
        ("assistant", "message", f"The app now connects on port {port}."),
    ]
    return [{"event_id": f"{user}-{thread}-{i}", "user_id": user, "project_id": "shop",
             "thread_id": thread, "ts": now, "role": role, "kind": kind, "content": content,
             **({"attrs": {"path": ".env"}} if kind == "file_edit" else {})}
            for i, (role, kind, content) in enumerate(rows)]


@pytest.fixture()
def live(tmp_path: Path) -> Iterator[Runtime]:
    settings = Settings(data_dir=tmp_path / "d", idle_flush_seconds=300.0, embedder="hash")
    runtime = build_runtime(settings, embedder=HashEmbedder())
    runtime.start()
    yield runtime
    runtime.stop()


def _ask(runtime: Runtime, user: str, query: str) -> dict[str, Any]:
    return runtime.recall.recall(RecallRequest(user_id=user, query=query, k=5))


def test_open_window_is_recallable_at_once_then_the_memory_takes_over(live: Runtime) -> None:
    mine, other = _events("u1", "pgb", "6432"), _events("u2", "pgb", "7777")
    assert live.gateway.submit(mine + other, "test").accepted == 6
    wait_until(lambda: live.gateway.unprocessed() == 0, timeout=30)
    assert live.memories.list_memories("u1", limit=10) == []  # nothing observed yet

    answer = _ask(live, "u1", "What is DB_PORT now?")
    assert answer["classification"] == "exact_value_needed"
    assert answer["memories"] == []
    fresh = answer["evidence"]
    assert fresh, answer
    first = fresh[0]
    assert first["extracted_text"].splitlines()[0] == "+DB_PORT=6432"  # verbatim line
    assert first["matched_event_ids"] == ["u1-pgb-1"]
    assert (first["source_thread_id"], first["source_start_index"],
            first["source_end_index"]) == ("pgb", 0, 2)  # the whole open window
    assert first["memory_id"] is None
    assert first["observed"] is False and first["status"] == "open_window"
    text = "\n".join(e["extracted_text"] for e in fresh)
    assert "7777" not in text  # another tenant's open window is never searched
    assert answer["token_cost"] > 0 and answer["level"] == 2

    # nothing matching: nothing from the open window; summaries only: no source at all
    assert _ask(live, "u1", "Which redis image tag do we use?")["evidence"] == []
    summary = live.recall.recall(RecallRequest(user_id="u1", query="What is DB_PORT now?",
                                               mode="summary"))
    assert summary["evidence"] == [] and summary["level"] == 0

    live.gateway.request_flush("u1", "pgb", "flush")
    wait_until(lambda: bool(live.memories.list_memories("u1", limit=10)), timeout=30)
    wait_until(lambda: live.gateway.unprocessed() == 0, timeout=30)
    after = _ask(live, "u1", "What is DB_PORT now?")
    memory_id = after["memories"][0]["id"]
    assert after["evidence"] and all(e.get("observed") is None for e in after["evidence"])
    lines = [ln for e in after["evidence"] for ln in e["extracted_text"].splitlines()]
    assert lines.count("+DB_PORT=6432") == 1  # the memory took over; no duplicate
    assert after["evidence"][0]["memory_id"] == memory_id

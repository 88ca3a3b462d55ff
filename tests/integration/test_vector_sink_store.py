"""serve's vector sink without a Qdrant server (``VECTOR_STORE=topic``): Qdrant Edge under
the data dir, and a new or emptied store rebuilt from the compacted ``vectors`` topic (its
consumer group names the store, so the offsets another store committed do not apply).
Real Kafka from infra/."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path

import pytest

from breadcrumb.infra.cluster_stores import build_sink_index, declare_topics, sink_group, sink_root
from breadcrumb.processors.lexical import sparse_vector
from breadcrumb.stores.embedders.hashing import HashEmbedder
from breadcrumb.stores.vectors.edge.collections import EdgeCollections
from breadcrumb.stores.vectors.sink.topic import KafkaRecordSender, TopicVectorIndex, VectorSink
from breadcrumb.topics.names import VECTORS
from breadcrumb.topics.records import Observation, SourceRange
from tests.integration.conftest import cluster_settings, drop_database

pytestmark = pytest.mark.integration
N = 12


def _memories() -> list[Observation]:
    return [Observation(id=str(uuid.UUID(int=n + 1)), user_id="alice", project_id=None,
                        summary=f"decision {n}: the email regex", retrieve_when="",
                        source_range=SourceRange("t1", n, n), tags=(), query_hints=(),
                        importance=0.5, created_at="2026-01-01T00:00:00Z")
            for n in range(N)]


def _drain(sink: VectorSink, expect: int) -> int:
    """Run the sink until it applied ``expect`` records (bounded: 90 s), then 2 s more to
    see whether more come; how many it applied."""
    async def run() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(sink.run(stop, poll_ms=200))
        for _ in range(450):
            if sink.applied >= expect:
                break
            await asyncio.sleep(0.2)
        await asyncio.sleep(2)
        stop.set()
        await task
    asyncio.run(run())
    return sink.applied


def test_a_new_sink_store_is_rebuilt_from_the_vectors_topic(tmp_path: Path) -> None:
    settings = cluster_settings(tmp_path, vector_store="topic")
    try:
        asyncio.run(declare_topics(settings))
        embedder = HashEmbedder()
        memories = _memories()

        def send(batch: list[Observation]) -> None:
            sender = KafkaRecordSender(settings.kafka_bootstrap, settings.topic(VECTORS))
            topic = TopicVectorIndex(sender, sender.close,
                                     prefix=settings.qdrant_collection_prefix)
            texts = [m.summary for m in batch]
            topic.upsert_memories(batch, embedder.embed_passages(texts),
                                  [sparse_vector(t) for t in texts])
            topic.close()

        def sink() -> tuple[VectorSink, EdgeCollections]:
            store = build_sink_index(settings, embedder.dim)
            return VectorSink(store, settings.kafka_bootstrap, settings.topic(VECTORS),
                              sink_group(settings)), store

        send(memories[:-1])
        first, store = sink()
        assert isinstance(store, EdgeCollections)
        assert _drain(first, N - 1) == N - 1 and store.count()["memories"] == N - 1
        store.close()
        send(memories[-1:])
        again, store = sink()  # the same store: its group resumes after its commit
        assert _drain(again, 1) == 1 and store.count()["memories"] == N
        store.close()
        shutil.rmtree(sink_root(settings))  # the data dir lost: a new store, a new group
        rebuilt, store = sink()  # reads the compacted topic from its start
        assert _drain(rebuilt, N) == N and store.count()["memories"] == N
        store.close()
    finally:
        drop_database(settings.mysql_database)

"""LifecycleService on MySQL with the REAL Kafka ``memory-status`` topic as changelog."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.infra.bootstrap import build_lifecycle
from breadcrumb.infra.cluster import build_sql_store, declare_topics
from breadcrumb.processors.lexical import sparse_vector
from breadcrumb.stores.cold.storage import LocalColdStore
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from breadcrumb.streams.lifecycle.runners import KafkaChangelog
from breadcrumb.topics.names import MEMORY_STATUS
from breadcrumb.topics.records import Observation, SourceRange
from tests.integration.conftest import cluster_settings, drop_database

pytestmark = pytest.mark.integration
MID = "6f1c3a52-0000-4000-8000-000000000001"


async def _read_topic(bootstrap: str, topic: str) -> list[tuple[str, Any]]:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        batches = await consumer.getmany(timeout_ms=5000)
        records = [r for rs in batches.values() for r in rs]
    finally:
        await consumer.stop()
    return [(r.key.decode(), None if r.value is None else json.loads(r.value)) for r in records]


@dataclass
class World:
    """One memory of u1 on MySQL + Qdrant Edge, its lifecycle publishing to the real topic."""

    settings: Any
    store: Any
    index: QdrantEdgeIndex
    topic: str
    life: Any
    mem: Observation
    t0: datetime

    def topic_values(self) -> list[tuple[str, Any]]:
        return asyncio.run(_read_topic(self.settings.kafka_bootstrap, self.topic))


@pytest.fixture()
def world(tmp_path: Path) -> Iterator[World]:
    settings = cluster_settings(tmp_path)
    asyncio.run(declare_topics(settings))
    store = build_sql_store(settings)
    index = QdrantEdgeIndex(tmp_path / "v", 4)
    index.ensure()
    topic = settings.topic(MEMORY_STATUS)
    kafka = KafkaChangelog(settings.kafka_bootstrap, topic)
    kafka.start()
    try:
        life, _raw = build_lifecycle(settings, store, index, LocalColdStore(tmp_path / "c"), kafka)
        mem = Observation(MID, "u1", "p", "s", SourceRange("t", 0, 1), (), (), "", 0.5,
                          "2024-05-01T00:00:00+00:00")
        index.upsert_memories([mem], [[0.1, 0.2, 0.3, 0.4]], [sparse_vector("s")])
        store.memories.upsert_memory(mem)
        life.tables.lives.ensure_life("u1", MID, mem.created_at)
        t0 = life.clock().replace(year=2024, month=5, day=1, hour=0, minute=0, second=0,
                                  microsecond=0)
        yield World(settings, store, index, topic, life, mem, t0)
    finally:
        kafka.stop()
        index.close()
        store.close()
        drop_database(settings.mysql_database)


def test_sweeps_publish_to_kafka_and_replay_agrees(world: World) -> None:
    store, life, t0 = world.store, world.life, world.t0
    for i in range(3):
        store.memories.record_usage("u1", [MID], (t0 + timedelta(hours=i)).isoformat())
    life.sweep(t0 + timedelta(hours=3))
    life.sweep(t0 + timedelta(days=31))
    row = store.memories.get_memory_row("u1", MID)
    assert (row["status"], row["tier"]) == ("active", "provisional")
    life.sweep(t0 + timedelta(days=38))
    assert store.memories.get_memory_row("u1", MID) is None
    values = world.topic_values()
    assert [(k, v and v["tier"]) for k, v in values] == [
        (MID, "confirmed"), (MID, "provisional"), (MID, None)]
    audit = store.audit.list_audit("u1", MID)
    assert [a["to_value"] for a in audit] == ["confirmed", "provisional", "deleted"]
    # replay the topic into a re-created memory: the tombstone deletes it again
    store.memories.upsert_memory(world.mem)
    assert life.replay(values) >= 1
    assert store.memories.get_memory_row("u1", MID) is None


def test_full_walk_sql_payload_topic_and_audit_agree(world: World) -> None:
    """Every promotion, demotion, manual status change and the deletion, with an injected
    clock: the SQL row, the Qdrant payload, the real Kafka topic and the audit agree."""
    store, life, t0 = world.store, world.life, world.t0
    seen: list[tuple[str, str]] = []

    def state() -> tuple[str, str]:
        row = store.memories.get_memory_row("u1", MID)
        payload = world.index._memory_payloads({MID})[MID]
        assert (payload["status"], payload["tier"]) == (row["status"], row["tier"])
        seen.append((row["status"], row["tier"]))
        return row["status"], row["tier"]

    for i in range(3):
        store.memories.record_usage("u1", [MID], (t0 + timedelta(hours=i + 1)).isoformat())
    life.sweep(t0 + timedelta(hours=4))
    assert state() == ("active", "confirmed")
    for i in range(10):
        store.memories.record_usage("u1", [MID], (t0 + timedelta(hours=5 + i)).isoformat())
    life.sweep(t0 + timedelta(hours=20))
    assert state() == ("active", "active")
    life.sweep(t0 + timedelta(days=400))
    assert state() == ("active", "confirmed")
    life.sweep(t0 + timedelta(days=431))
    assert state() == ("active", "provisional")
    life.clock = lambda: t0 + timedelta(days=432)
    life.set_manual("u1", MID, "alice", "wrong value", status="conflicted")
    assert state() == ("conflicted", "provisional")
    life.set_manual("u1", MID, "alice", "fixed", status="active")
    assert state() == ("active", "provisional")
    life.sweep(t0 + timedelta(days=439))
    assert store.memories.get_memory_row("u1", MID) is None

    on_topic = [(k, None if v is None else (v["status"], v["tier"]))
                for k, v in world.topic_values()]
    assert on_topic == [(MID, s) for s in seen] + [(MID, None)]
    audit = [(a["field"], a["from_value"], a["to_value"], a["actor"])
             for a in store.audit.list_audit("u1", MID)]
    assert audit == [
        ("tier", "provisional", "confirmed", "sweeper"),
        ("tier", "confirmed", "active", "sweeper"),
        ("tier", "active", "confirmed", "sweeper"),
        ("tier", "confirmed", "provisional", "sweeper"),
        ("status", "active", "conflicted", "alice"),
        ("status", "conflicted", "active", "alice"),
        ("tier", "provisional", "deleted", "sweeper")]

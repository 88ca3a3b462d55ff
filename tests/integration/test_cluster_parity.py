"""Cluster mode on the real Kafka + MariaDB: a Faust worker process gives the same memories
as the embedded runner for the same events; duplicates and invalid messages are handled."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from breadcrumb.infra.bootstrap import build_runtime, utc_now_iso
from breadcrumb.infra.cluster import build_sql_store, declare_topics
from breadcrumb.settings import Settings
from breadcrumb.streams.kafka.gateway import KafkaGateway
from breadcrumb.topics.kafka_security import started
from tests.conftest import example_events, wait_until
from tests.integration.conftest import cluster_settings, drop_database, start_worker, stop_worker

pytestmark = pytest.mark.integration


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[tuple[Settings, Any]]:
    settings = cluster_settings(tmp_path)
    store = build_sql_store(settings)
    log = tmp_path / "worker.log"
    worker = start_worker(settings, log)
    gateway = KafkaGateway(settings, store, utc_now_iso, declare=lambda: declare_topics(settings))
    gateway.start()
    try:
        yield settings, (store, gateway, worker, log)
    finally:
        gateway.stop()
        stop_worker(worker)
        store.close()
        drop_database(settings.mysql_database)


def _wait_done(gateway: KafkaGateway, worker: subprocess.Popen[bytes], log: Path) -> None:
    def done() -> bool:
        if worker.poll() is not None:
            raise AssertionError("worker died:\n" + log.read_text()[-4000:])
        return gateway.pending() == 0
    wait_until(done, timeout=180, interval=0.5)


def _embedded_memories(tmp_path: Path, events: list[dict[str, Any]]) -> list[tuple]:
    runtime = build_runtime(Settings(data_dir=tmp_path / "embedded"))
    try:
        runtime.gateway.submit(events, "test")
        runtime.gateway.wait_processed(300)
        return _ranges(runtime.derived_store(), "demo")
    finally:
        runtime.stop()


def _ranges(store: Any, user_id: str) -> list[tuple]:
    rows = store.memories.list_memories(user_id, 1000, 0)
    return sorted((m.id, m.source_range.thread_id, m.source_range.start_index,
                   m.source_range.end_index) for m in rows)


def test_faust_worker_matches_embedded_runner(cluster: tuple[Settings, Any],
                                              tmp_path: Path) -> None:
    settings, (store, gateway, worker, log) = cluster
    events = example_events()
    result = gateway.submit(events, "test")
    assert result.accepted == len(events)
    _wait_done(gateway, worker, log)

    cluster_ranges = _ranges(store, "demo")
    assert cluster_ranges, "the worker produced no memories"
    assert cluster_ranges == _embedded_memories(tmp_path, events)

    thread = [e for e in events if e["thread_id"] == "auth-refactor"]
    stored = store.events.get_range("demo", "auth-refactor", 0, 10_000)
    assert [e.content for e in stored] == [e["content"] for e in thread]

    # a retried publish (same event_id) changes nothing
    assert gateway.submit(events[:5], "test").duplicates == 5
    asyncio.run(_publish_raw(settings, [(b"demo/auth-refactor", orjson.dumps(events[0]))]))
    _wait_done(gateway, worker, log)
    assert store.events.count_events() == len(events)
    assert _ranges(store, "demo") == cluster_ranges


def test_invalid_messages_go_to_the_dead_letter_topic_and_table(
        cluster: tuple[Settings, Any]) -> None:
    settings, (store, gateway, worker, log) = cluster
    bad = {**example_events()[0], "event_id": "bad-kind", "kind": "telepathy"}
    asyncio.run(_publish_raw(settings, [(b"demo/x", orjson.dumps(bad)), (b"demo/x", b"{oops")]))
    _wait_done(gateway, worker, log)
    letters = store.dead_letters.list_dead_letters(10)
    reasons = sorted(letter.reason for letter in letters)
    assert any("'kind'" in r for r in reasons) and any("not JSON" in r for r in reasons)
    on_topic = asyncio.run(_consume(settings.topic("agent-events-dlq"), settings, 2))
    assert len(on_topic) == 2 and all("reason" in orjson.loads(v) for v in on_topic)


def test_idle_thread_is_flushed_by_a_keyed_message(cluster: tuple[Settings, Any]) -> None:
    settings, (store, gateway, worker, log) = cluster
    events = [e for e in example_events() if e["kind"] != "session_end"]
    gateway.submit(events, "test")
    _wait_done(gateway, worker, log)  # pending reaches 0 only once the idle flush ran
    assert store.states.count_pending_window_events() == 0
    flushes = asyncio.run(_consume(settings.topic("agent-events"), settings, len(events) + 2))
    assert any(orjson.loads(v).get("_control") == "flush" for v in flushes)


async def _publish_raw(settings: Settings, messages: list[tuple[bytes, bytes]]) -> None:
    producer = await started(AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap))
    try:
        for key, value in messages:
            await producer.send_and_wait(settings.topic("agent-events"), value, key=key)
    finally:
        await producer.stop()


async def _consume(topic: str, settings: Settings, at_least: int) -> list[bytes]:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=settings.kafka_bootstrap,
                                auto_offset_reset="earliest", group_id=None)
    await consumer.start()
    values: list[bytes] = []
    try:
        deadline = asyncio.get_running_loop().time() + 20
        while len(values) < at_least and asyncio.get_running_loop().time() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            for records in batch.values():
                values.extend(r.value for r in records if r.value is not None)
    finally:
        await consumer.stop()
    return values

"""The publishing SDK against the real Kafka (and a real worker for the dedupe check)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from breadcrumb.infra.cluster import build_sql_store, declare_topics
from breadcrumb.infra.topic_admin import TopicAdmin
from breadcrumb.processors.validate import Rejection, validate_event
from breadcrumb.sdk import (
    Backoff,
    Breadcrumb,
    IndexCounters,
    InvalidEventError,
    Publisher,
    PublishError,
    SyncPublisher,
    checked,
    plainly_valid,
)
from breadcrumb.settings import Settings
from breadcrumb.topics.names import AGENT_EVENTS, topic_specs
from tests.conftest import wait_until
from tests.integration.conftest import cluster_settings, drop_database, start_worker, stop_worker

pytestmark = pytest.mark.integration


def _event(user: str, thread: str, n: int, **extra: Any) -> dict[str, Any]:
    return {"event_id": f"{thread}-{n}", "user_id": user, "thread_id": thread,
            "ts": f"2026-11-20T10:00:{n:02d}Z", "role": "assistant", "kind": "message",
            "content": f"step {n} of {thread}: PORT={6000 + n}", **extra}


@pytest.fixture()
async def topic_settings() -> AsyncIterator[Settings]:
    settings = Settings(topic_prefix=f"sdk{uuid.uuid4().hex[:8]}-")
    await declare_topics(settings)
    yield settings
    async with TopicAdmin(settings.kafka_bootstrap) as admin:
        await admin.delete(spec.name for spec in topic_specs(settings.topic_prefix))


async def _consume(settings: Settings, expected: int) -> list[Any]:
    topic = settings.topic(AGENT_EVENTS)
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.kafka_bootstrap,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    try:
        parts = [TopicPartition(topic, p) for p in range(settings.kafka_partitions)]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        records: list[Any] = []
        for _ in range(50):
            batch = await consumer.getmany(timeout_ms=200)
            records += [r for rs in batch.values() for r in rs]
            if len(records) >= expected:
                break
        return records
    finally:
        await consumer.stop()


async def test_keys_order_per_thread_and_values(topic_settings: Settings) -> None:
    events = [_event("u1", thread, n) for n in range(6) for thread in ("alpha", "beta", "gamma")]
    async with Publisher(settings=topic_settings) as pub:
        assert pub.topic == topic_settings.topic_prefix + "agent-events"
        receipts = await pub.publish_many(events)
    assert [r.event_id for r in receipts] == [e["event_id"] for e in events]
    records = await _consume(topic_settings, len(events))
    assert len(records) == len(events)
    by_key: dict[bytes, list[dict[str, Any]]] = {}
    partitions: dict[bytes, set[int]] = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        by_key.setdefault(record.key, []).append(orjson.loads(record.value))
        partitions.setdefault(record.key, set()).add(record.partition)
    assert set(by_key) == {b"u1/alpha", b"u1/beta", b"u1/gamma"}
    for key, values in by_key.items():
        thread = key.decode().split("/")[1]
        assert values == [e for e in events if e["thread_id"] == thread]  # order + bytes
        assert len(partitions[key]) == 1


async def test_invalid_events_are_never_sent(topic_settings: Settings) -> None:
    good = _event("u1", "t", 0)
    bad = {**_event("u1", "t", 1), "ts": "yesterday"}
    async with Publisher(settings=topic_settings) as pub:
        with pytest.raises(InvalidEventError) as caught:
            await pub.publish_many([good, bad])
        assert caught.value.field == "ts" and caught.value.position == 1
        assert "'ts'" in str(caught.value) and "t-1" in str(caught.value)
        with pytest.raises(InvalidEventError, match="'content'"):
            await pub.publish({k: v for k, v in good.items() if k != "content"})
        await pub.publish(_event("u1", "t", 2))  # the publisher still works afterwards
    records = await _consume(topic_settings, 1)
    assert [orjson.loads(r.value)["event_id"] for r in records] == ["t-2"]


async def test_index_counters_and_the_sync_wrapper(topic_settings: Settings) -> None:
    counters = IndexCounters({("u1", "resumed"): 7})
    events = [_event("u1", "resumed", n) for n in range(3)] + [_event("u1", "fresh", 0)]
    with SyncPublisher(Publisher(settings=topic_settings, index_counters=counters)) as pub:
        first = pub.publish(events[0])
        rest = pub.publish_many(events[1:])
    assert first.event_id == "resumed-0" and len(rest) == 3
    assert counters.next_index("u1", "resumed") == 10
    values = [orjson.loads(r.value) for r in await _consume(topic_settings, 4)]
    indexes = {v["event_id"]: v["index"] for v in values}
    assert indexes == {"resumed-0": 7, "resumed-1": 8, "resumed-2": 9, "fresh-0": 0}


async def test_unreachable_cluster_is_retried_then_reported() -> None:
    pub = Publisher("127.0.0.1:1", topic="nowhere", backoff=Backoff(retries=1, base=0.05))
    with pytest.raises(PublishError, match="cannot connect to Kafka at 127.0.0.1:1"):
        await pub.start()


async def test_a_resent_event_is_two_messages_but_one_stored_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BREADCRUMB_EMBEDDER", "hash")
    settings = cluster_settings(tmp_path)
    await declare_topics(settings)
    events = [_event("u1", "retry", n) for n in range(3)]
    end = {**_event("u1", "retry", 9), "kind": "session_end", "role": "system"}
    async with Publisher(settings=settings) as pub:
        await pub.publish_many(events)
        await pub.publish(events[1])  # a producer retry after an ambiguous failure
        await pub.publish(end)
    assert len(await _consume(settings, 5)) == 5
    worker = start_worker(settings, tmp_path / "worker.log")
    store = build_sql_store(settings)
    try:
        def stored() -> bool:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
            return store.events.get_event("u1", "retry-9") is not None
        await asyncio.to_thread(wait_until, stored, 120, 0.5)
        rows = store.events.get_range("u1", "retry", 0, 100)
        assert [e.event_id for e in rows] == ["retry-0", "retry-1", "retry-2", "retry-9"]
        assert [e.index for e in rows] == [0, 1, 2, 3]
        # received once per published message (the resend too, as a duplicate), as the
        # gateway counts a resubmitted item; /v1/stats and /metrics read these counters
        counted = {"events_received": 5, "duplicates": 1, "events_processed": 4}
        await asyncio.to_thread(wait_until, lambda: _counters(store, counted) == counted,
                                60, 0.5)
        # every message consumed again (the group rewound): received does not move
        stop_worker(worker)
        await _rewind_group(settings)
        worker = start_worker(settings, tmp_path / "worker2.log")
        await asyncio.to_thread(wait_until, lambda: _counters(store, {"redeliveries": 0})
                                == {"redeliveries": 5}, 120, 0.5)
        assert _counters(store, counted) == counted
    finally:
        stop_worker(worker)
        store.close()
        drop_database(settings.mysql_database)
        async with TopicAdmin(settings.kafka_bootstrap) as admin:
            await admin.delete(spec.name for spec in topic_specs(settings.topic_prefix))


def _counters(store: Any, names: dict[str, int]) -> dict[str, int]:
    values = store.counters.get_counters()
    return {name: int(values.get(name, 0)) for name in names}


async def _rewind_group(settings: Settings) -> None:
    """Commit offset 0 for the (stopped) worker group: everything is redelivered."""
    topic = settings.topic(AGENT_EVENTS)
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.kafka_bootstrap,
                                group_id=settings.worker_id, enable_auto_commit=False)
    await consumer.start()
    try:
        parts = [TopicPartition(topic, p) for p in range(settings.kafka_partitions)]
        consumer.assign(parts)
        await consumer.commit({tp: 0 for tp in parts})
    finally:
        await consumer.stop()


def test_the_client_adds_over_kafka_and_a_retry_stores_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Breadcrumb(kafka=…)``: ids filled deterministically, flush closes the window."""
    monkeypatch.setenv("BREADCRUMB_EMBEDDER", "hash")
    settings = cluster_settings(tmp_path)
    asyncio.run(declare_topics(settings))
    chat = [{"role": "user", "content": "Deploy with HELM_TIMEOUT=17m from now on."},
            {"role": "assistant", "content": "Set HELM_TIMEOUT=17m in deploy/values.yaml."}]
    with Breadcrumb(kafka=settings.kafka_bootstrap, topic_prefix=settings.topic_prefix,
                    user_id="kafka-user") as bc:
        first = bc.add(chat, thread_id="deploy")
        retry = bc.add(chat, thread_id="deploy")  # e.g. after an ambiguous failure
        bc.flush("deploy")
    assert first.transport == "kafka" and first.accepted == 2
    assert retry.event_ids == first.event_ids
    assert len(asyncio.run(_consume(settings, 5))) == 5  # 4 events and the flush marker
    worker = start_worker(settings, tmp_path / "worker.log")
    store = build_sql_store(settings)
    try:
        def summarised() -> bool:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
            return bool(store.memories.list_memories("kafka-user"))
        wait_until(summarised, 120, 0.5)
        rows = store.events.get_range("kafka-user", "deploy", 0, 100)
        assert [e.event_id for e in rows] == first.event_ids  # the retry stored nothing
        assert "HELM_TIMEOUT=17m" in rows[0].content
    finally:
        stop_worker(worker)
        store.close()
        drop_database(settings.mysql_database)
        asyncio.run(_delete_topics(settings))


async def _delete_topics(settings: Settings) -> None:
    async with TopicAdmin(settings.kafka_bootstrap) as admin:
        await admin.delete(spec.name for spec in topic_specs(settings.topic_prefix))


# --- pure checks of the SDK's fast validation path (no services needed) ----------------

_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False),
                    st.text(max_size=3), st.just("x" * 129), st.just("x" * 257),
                    st.sampled_from(["user", "tool", "message", "session_end", "",
                                     "2026-11-20T10:00:00Z", "2026-11-20T10:00:00",
                                     "2026-11-20T10:00:00+09:00", "not a time"]),
                    st.lists(st.integers(), max_size=1), st.dictionaries(st.text(max_size=2),
                                                                          st.integers(),
                                                                          max_size=1))
_NAMES = st.sampled_from(["event_id", "user_id", "thread_id", "ts", "role", "kind", "content",
                          "project_id", "agent_id", "index", "tool", "attrs", "tokens",
                          "extra"])


@given(changes=st.dictionaries(_NAMES, _VALUES, max_size=3),
       removed=st.sets(_NAMES, max_size=2))
@hypothesis_settings(max_examples=600, deadline=None)
def test_fast_path_accepts_only_what_the_contract_accepts(
    changes: dict[str, Any], removed: set[str]
) -> None:
    event = {**_event("u1", "t", 1, project_id="p", index=3, tokens=5, tool="bash",
                      attrs={"exit_code": 0}), **changes}
    for name in removed:
        event.pop(name, None)
    contract_ok = not isinstance(validate_event(event), Rejection)
    if plainly_valid(event):
        assert contract_ok, event
    try:
        checked(event)
        assert contract_ok, event
    except InvalidEventError:
        assert not contract_ok, event


def test_fast_path_takes_the_common_event() -> None:
    assert plainly_valid(_event("u1", "t", 1, attrs={"path": "a.py"}, index=None))
    assert not plainly_valid({**_event("u1", "t", 1), "index": True})

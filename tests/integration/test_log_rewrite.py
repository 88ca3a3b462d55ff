"""The log rewrite against the real Kafka (issue 26): erased records leave the topic —
for consumers at once, from the broker's disk at its next retention check — while every
survivor is read exactly once, in its key's order, with its headers and timestamp, even
with producers appending to the same partitions during the rewrite (a chatty thread every
100 ms per partition, and the copied threads every 500 ms)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import TopicPartition

from breadcrumb.processors.log_rewrite_plan import LogRecord
from breadcrumb.streams.kafka.log_rewrite import FENCE_THREAD, Kafka, rewrite_topic
from breadcrumb.topics.kafka_security import started
from breadcrumb.topics.records import FlushMarker
from tests.integration.kafka_disk import holders, read_to_end, topic_dirs, wait_removed

pytestmark = pytest.mark.integration
BOOTSTRAP = "127.0.0.1:9092"
DELETE_DELAY_MS = 1000


def _event(user: str, thread: str, seq: int, text: str) -> bytes:
    return orjson.dumps({"event_id": f"{thread}-{seq}", "user_id": user, "thread_id": thread,
                         "seq": seq, "ts": "2026-12-01T10:00:00Z", "kind": "message",
                         "content": text})


async def _consume_all(topic: str) -> list[Any]:
    consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False,
                                auto_offset_reset="earliest", group_id=None)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic)
                                                        or await _ids(topic))]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        return await read_to_end(consumer, tps)
    finally:
        await consumer.stop()


async def _commit(topic: str, group: str, offset: int) -> None:
    """A consumer group that stopped at ``offset`` of each partition (a worker behind)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False,
                                group_id=group)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in await _ids(topic)]
        consumer.assign(tps)
        await consumer.commit(dict.fromkeys(tps, offset))
    finally:
        await consumer.stop()


async def _resume(topic: str, group: str) -> list[Any]:
    """That group's consumer started again (``auto_offset_reset`` as the workers')."""
    consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False,
                                auto_offset_reset="earliest", group_id=group)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in await _ids(topic)]
        consumer.assign(tps)
        return await read_to_end(consumer, tps)
    finally:
        await consumer.stop()


async def _ids(topic: str) -> list[int]:
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        return [p["partition"] for d in await admin.describe_topics([topic])
                for p in d["partitions"]]
    finally:
        await admin.close()


def _secret_predicate(secret: bytes) -> Any:
    def erased(records: Sequence[LogRecord]) -> set[int]:
        return {i for i, r in enumerate(records) if r.value and secret in r.value}
    return erased


async def _scenario(topic: str, secret: bytes) -> tuple[list[Any], dict[str, list[int]], Any,
                                                       list[Any]]:
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    await admin.create_topics([NewTopic(topic, 2, 1, topic_configs={
        "retention.ms": "-1", "file.delete.delay.ms": str(DELETE_DELAY_MS)})])
    await admin.close()
    producer = await started(AIOKafkaProducer(
        bootstrap_servers=BOOTSTRAP, acks="all", enable_idempotence=True))
    sent: dict[str, list[int]] = {}
    try:
        for seq in range(40):  # both partitions: erased records among survivors
            for p, thread in ((0, "keep-a"), (1, "keep-b")):
                await producer.send(topic, _event("u1", thread, seq, f"plain {seq}"),
                                    key=f"u1/{thread}".encode(), partition=p,
                                    headers=[("origin", f"{thread}:{seq}".encode())],
                                    timestamp_ms=1_700_000_000_000 + seq)
                sent.setdefault(thread, []).append(seq)
            if seq % 4 == 0:
                await producer.send(topic, _event("u1", "gone", seq, secret.decode()),
                                    key=b"u1/gone", partition=seq % 8 // 4)
            if seq == 20:  # a flush marker among the survivors: not copied
                await producer.send(topic, orjson.dumps(FlushMarker(
                    "u1", "keep-a", "2026-12-01T10:00:00Z", "flush").to_dict()),
                    key=b"u1/keep-a", partition=0)
        await producer.flush()
        assert await asyncio.get_running_loop().run_in_executor(  # on disk before
            None, holders, BOOTSTRAP, topic, secret)
        await _commit(topic, f"{topic}-behind", 5)

        live_done = asyncio.Event()

        async def live() -> None:  # producers writing during the rewrite: a busy thread
            seq = 1000  # on each partition (new keys) and a slower one on the copied keys
            while not live_done.is_set():
                for p, thread in ((0, "busy-a"), (1, "busy-b")):
                    await producer.send_and_wait(topic, _event("u1", thread, seq, "live"),
                                                 key=f"u1/{thread}".encode(), partition=p)
                    sent.setdefault(thread, []).append(seq)
                if seq % 5 == 0:
                    for p, thread in ((0, "keep-a"), (1, "keep-b")):
                        await producer.send_and_wait(
                            topic, _event("u1", thread, seq, "live"),
                            key=f"u1/{thread}".encode(), partition=p)
                        sent[thread].append(seq)
                seq += 1
                await asyncio.sleep(0.1)

        writer = asyncio.create_task(live())
        try:
            reports = await rewrite_topic(Kafka(BOOTSTRAP), topic, _secret_predicate(secret))
        finally:
            live_done.set()
            await writer
    finally:
        await producer.stop()
    return await _consume_all(topic), sent, reports, await _resume(topic, f"{topic}-behind")


async def _delete(topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        await admin.delete_topics([topic])
    finally:
        await admin.close()


def test_rewrite_removes_erased_records_and_keeps_every_survivor_in_order() -> None:
    tag = uuid.uuid4().hex[:10]
    topic, secret = f"bc_test_erase_{tag}", f"SECRET-{tag}".encode()
    try:
        records, sent, reports, resumed = asyncio.run(_scenario(topic, secret))
        assert [r.partition for r in reports if r.log_start] == [0, 1]
        # a group whose offset (5) is now below the log start resumes at the log start
        # and reads what a reader from the beginning reads: no survivor skipped
        for r in reports:
            offsets = [m.offset for m in resumed if m.partition == r.partition]
            assert offsets[0] == r.log_start, (r, offsets[:3])
            assert offsets == [m.offset for m in records if m.partition == r.partition]
        assert sum(r.erased for r in reports) == 10
        assert all(secret not in (r.value or b"") for r in records)
        by_thread: dict[str, list[int]] = {}
        for r in records:
            entry = orjson.loads(r.value)
            assert not FlushMarker.is_flush(entry)  # its copy would close an open window
            assert entry.get("thread_id") != FENCE_THREAD  # the fence is below the log start
            by_thread.setdefault(entry["thread_id"], []).append(entry["seq"])
            if entry["seq"] < 1000:  # a copy: its headers and timestamp as produced
                assert r.headers == (("origin", f"{entry['thread_id']}:{entry['seq']}"
                                      .encode()),)
                assert r.timestamp == 1_700_000_000_000 + entry["seq"]
        assert set(by_thread) == {"keep-a", "keep-b", "busy-a", "busy-b"}
        for thread, seqs in by_thread.items():  # exactly once each, in the key's order
            assert seqs == sent[thread], thread
        took = wait_removed(BOOTSTRAP, topic, secret, DELETE_DELAY_MS)
        print(f"rounds per partition {[r.rounds for r in reports]}, log starts "
              f"{[r.log_start for r in reports]}; erased bytes gone from the broker's files "
              f"{took:.0f} s after the rewrite")
        assert all(f.stat().st_size == 0 or secret not in f.read_bytes()
                   for d in topic_dirs(BOOTSTRAP, topic) for f in d.iterdir() if f.is_file())
    finally:
        asyncio.run(_delete(topic))

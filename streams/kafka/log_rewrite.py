"""Erasure reaches the Kafka log (issue 26, cluster mode): rewrite a partition in place.

``agent-events`` keeps events forever and its format is the contract (plain JSON, key
``{user_id}/{thread_id}``), so a forgotten thread's events are removed from it (and from
``agent-events-dlq`` and ``observations``, which hold the same texts) by a rewrite,
partition by partition, of those that hold an erased record (the tombstones' predicate,
``processors.log_rewrite_plan.record_scopes``):

1. the topic's ``segment.ms`` is lowered to 1 ms (AlterConfigs; put back right after)
   and a *fence* record is appended: its fresh timestamp makes the broker roll a new
   segment, so the fence opens it and every older record sits in closed segments;
2. every survivor below the fence (read from the log start; first those read before the
   fence — the scan, caught up just before it — right after the fence's acknowledgement,
   then the few that landed between that read and the fence) is appended again — same
   key, value, headers and timestamp, same partition, in order, with an idempotent
   ``acks=all`` producer;
3. the records after the fence are read back: when a live producer's record of a key
   landed before one of that key's copies, the thread would be read out of order, so a
   new round (new fence) copies the survivors again followed by what arrived
   (:data:`MAX_ROUNDS`, then :class:`LogRewriteError` with nothing deleted);
4. ``deleteRecords`` up to just after the fence: the log start moves past every original
   and the fence. The broker deletes the closed segments below the log start at its
   next retention check (``log.retention.check.interval.ms``), after
   ``file.delete.delay.ms``.

A consumer whose position is below the new log start gets ``OFFSET_OUT_OF_RANGE`` and
resets to the earliest offset (the workers' ``auto_offset_reset="earliest"``): it reads
the copies, and the events it had applied already are duplicates by event id. The fence
is a flush marker of a thread no tenant has (``__breadcrumb/log-rewrite``) on
``agent-events``, a dead letter without payload on the DLQ and a ``_control`` record on
``observations``: a worker reading during the rewrite flushes nothing with it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from breadcrumb.processors.log_rewrite_plan import (
    DEAD_LETTERS,
    EVENTS,
    OBSERVATIONS,
    LogRecord,
    arrivals,
    erased_indexes,
    order_violations,
    record_scopes,
    survivors,
)
from breadcrumb.stores.clock import utc_now_iso
from breadcrumb.stores.ports.tables import Store, Tombstones
from breadcrumb.topics.kafka_security import aiokafka_kwargs, started
from breadcrumb.topics.names import AGENT_EVENTS
from breadcrumb.topics.names import DEAD_LETTERS as DEAD_LETTERS_TOPIC
from breadcrumb.topics.names import OBSERVATIONS as OBSERVATIONS_TOPIC
from breadcrumb.topics.records import FlushMarker, thread_key

log = logging.getLogger(__name__)
MAX_ROUNDS = 5
FENCE_USER, FENCE_THREAD = "__breadcrumb", "log-rewrite"
_DYNAMIC_TOPIC_CONFIG = 1  # DescribeConfigs config_source of a topic's own override
_CHUNK = 500  # scopes per tombstone query
#: The copies go in batches as large as a broker takes by default (``message.max.bytes``
#: 1 MiB), queued without yielding to the sender: a batch is appended at once, so a live
#: producer's record can land among a key's copies only right after the fence or
#: between two batches (the order check).
BATCH_BYTES, LINGER_MS = 1_000_000, 0

#: Which records of a partition an erasure covers: indexes into the list.
Predicate = Callable[[Sequence[LogRecord]], set[int]]


class LogRewriteError(RuntimeError):
    """The rewrite of a partition could not finish; its log start did not move."""


@dataclass(slots=True)
class PartitionReport:
    """What the rewrite did to one partition."""

    topic: str
    partition: int
    read: int = 0
    erased: int = 0
    copied: int = 0
    rounds: int = 0
    log_start: int | None = None  # after the deleteRecords (None: nothing to rewrite)
    #: erased records a producer appended during the rewrite, after the fence: still in
    #: the log (a redelivery of a forgotten thread; the processors drop it): run it again
    arrived_erased: int = 0


@dataclass(slots=True)
class Kafka:
    """How to reach the brokers (bootstrap + aiokafka security keyword arguments)."""

    bootstrap: str
    security: dict[str, Any] = field(default_factory=dict)


def tombstone_predicate(store: Tombstones, kind: str = EVENTS) -> Predicate:
    """The processors' own check (``stores.sql.forget.tombstones``) over a partition's records."""

    def erased(records: Sequence[LogRecord]) -> set[int]:
        scopes = [record_scopes(r, kind) for r in records]
        flat = [s for own in scopes for s in own]
        hit: set[int] = set()
        for at in range(0, len(flat), _CHUNK):
            hit |= {at + i for i in store.erased_positions(flat[at:at + _CHUNK])}
        return erased_indexes(scopes, hit)

    return erased


def fence_value(kind: str = EVENTS) -> tuple[bytes | None, bytes]:
    """The fence's key and value: nothing of any tenant."""
    if kind == DEAD_LETTERS:
        return None, orjson.dumps({"reason": "log rewrite fence (carries no event)",
                                   "payload": "", "received_at": utc_now_iso(),
                                   "source": "cli"})
    key = thread_key(FENCE_USER, FENCE_THREAD).encode()
    if kind == OBSERVATIONS:
        return key, orjson.dumps({"_control": "log-rewrite-fence", "at": utc_now_iso()})
    marker = FlushMarker(FENCE_USER, FENCE_THREAD, utc_now_iso(), "log-rewrite")
    return key, orjson.dumps(marker.to_dict())


async def rewrite_topic(kafka: Kafka, topic: str, erased: Predicate,
                        kind: str = EVENTS,
                        max_rounds: int = MAX_ROUNDS) -> list[PartitionReport]:
    """Rewrite every partition of ``topic`` that holds a record ``erased`` names."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient

    reports: list[PartitionReport] = []
    async with AsyncExitStack() as opened:  # each client started is stopped, even when a
        # later one fails to start (a refused login, the cluster going down meanwhile); each
        # is made only once the one before it started: aiokafka reports a producer made and
        # never stopped ("Unclosed AIOKafkaProducer") wherever it is collected
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap, **kafka.security)
        opened.push_async_callback(admin.close)
        await admin.start()
        consumer = await started(AIOKafkaConsumer(
            bootstrap_servers=kafka.bootstrap, enable_auto_commit=False, group_id=None,
            **kafka.security))
        opened.push_async_callback(consumer.stop)
        producer = await started(AIOKafkaProducer(
            bootstrap_servers=kafka.bootstrap, acks="all", enable_idempotence=True,
            linger_ms=LINGER_MS, max_batch_size=BATCH_BYTES, **kafka.security))
        opened.push_async_callback(producer.stop)
        saved = await _topic_overrides(admin, topic)  # its configs, restored after a fence
        for partition in await _partitions(admin, topic):
            report = PartitionReport(topic, partition)
            reports.append(report)
            records = await _read(consumer, topic, partition, None, None)
            report.read = len(records)
            gone = erased(records)
            if gone:
                fence = _Fence(admin, producer, topic, partition, kind, saved)
                await _rewrite_partition(fence, consumer, report, records, gone, erased,
                                         max_rounds)
    return reports


@dataclass(slots=True)
class _Fence:
    """Appends a partition's fence in a segment of its own making."""

    admin: Any
    producer: Any
    topic: str
    partition: int
    kind: str
    saved: dict[str, str]  # the topic's overrides, put back after the copies

    async def lower(self) -> None:
        """``segment.ms=1`` until the broker reports it (:meth:`restore` puts the topic's
        own configs back)."""
        await _alter(self.admin, self.topic, {**self.saved, "segment.ms": "1"})
        for _ in range(100):
            if (await _topic_overrides(self.admin, self.topic)).get("segment.ms") == "1":
                break
            await asyncio.sleep(0.1)
        else:
            raise LogRewriteError(f"topic {self.topic}: segment.ms=1 not applied in 10 s")
        await asyncio.sleep(0.5)  # the log manager applies the config after the cache

    async def put(self) -> int:
        """The fence (its fresh timestamp rolls a new segment); its offset."""
        key, value = fence_value(self.kind)
        sent = await self.producer.send_and_wait(self.topic, value, key=key,
                                                 partition=self.partition)
        return int(sent.offset)

    async def restore(self) -> None:
        await _alter(self.admin, self.topic, self.saved)


async def _rewrite_partition(fence_at: _Fence, consumer: Any, report: PartitionReport,
                             records: list[LogRecord], gone: set[int], erased: Predicate,
                             max_rounds: int) -> None:
    from aiokafka.admin import RecordsToDelete
    from aiokafka.structs import TopicPartition

    topic, partition = report.topic, report.partition
    pending = survivors(records, gone, fence_at.kind)  # no flush marker is copied
    report.erased = len(gone)
    scanned = (records[-1].offset + 1) if records else 0
    for round_ in range(1, max_rounds + 1):
        report.rounds = round_
        try:
            await fence_at.lower()
            # catch up with what arrived since the scan, just before the fence: fewer
            # records land between the scan and the fence (read after the copies)
            now = await _end(consumer, topic, partition)
            caught = await _read(consumer, topic, partition, scanned, now)
            caught_gone = erased(caught)
            report.erased += len(caught_gone)
            pending += survivors(caught, caught_gone, fence_at.kind)
            scanned = max(scanned, now)
            fence = await fence_at.put()
        except BaseException:
            await fence_at.restore()
            raise
        # the topic's configs go back while the copies are appended (every live record
        # meanwhile rolls a small segment; the copies' old timestamps roll none)
        restored = asyncio.ensure_future(fence_at.restore())
        try:
            # the known survivors at once (a key's copies follow the fence within one
            # round trip), then what arrived between the scan and the fence
            copies = await _append(fence_at.producer, topic, partition, pending)
            late = await _read(consumer, topic, partition, scanned, fence)
            late_gone = erased(late)
            report.erased += len(late_gone)
            kept = survivors(late, late_gone, fence_at.kind)
            copies += await _append(fence_at.producer, topic, partition, kept)
            pending += kept
        finally:
            await restored
        end = (max(copies) + 1) if copies else fence + 1
        tail = await _read(consumer, topic, partition, fence + 1, end)
        bad = order_violations(tail, set(copies))
        if not bad:
            done = await fence_at.admin.delete_records(
                {TopicPartition(topic, partition): RecordsToDelete(fence + 1)})
            report.log_start = int(done[TopicPartition(topic, partition)])
            report.copied = len(pending)
            report.arrived_erased = len(erased(arrivals(tail, set(copies))))
            log.info("log rewrite %s/%d: %d erased, %d copied, log start %s (round %d)",
                     topic, partition, report.erased, report.copied, report.log_start,
                     round_)
            return
        log.warning("log rewrite %s/%d: %d key(s) got a record among their copies; "
                    "round %d copies again", topic, partition, len(bad), round_ + 1)
        foreign = arrivals(tail, set(copies))
        foreign_gone = erased(foreign)
        report.erased += len(foreign_gone)
        pending += survivors(foreign, foreign_gone, fence_at.kind)
        scanned = end
    raise LogRewriteError(f"{topic}/{partition}: live records kept landing among the copies "
                          f"in {max_rounds} rounds; nothing deleted, run it again "
                          "(`breadcrumb log rewrite`) when producers are quieter")


async def _append(producer: Any, topic: str, partition: int,
                  records: Sequence[LogRecord]) -> list[int]:
    """Produce ``records`` again in order (same key, value, headers, timestamp); offsets."""
    offsets: list[int] = []
    for at in range(0, len(records), 1000):
        sent = [await producer.send(topic, r.value, key=r.key, partition=partition,
                                    timestamp_ms=r.timestamp_ms, headers=list(r.headers))
                for r in records[at:at + 1000]]
        offsets += [m.offset for m in await asyncio.gather(*sent)]
    return offsets


async def _read(consumer: Any, topic: str, partition: int, start: int | None,
                end: int | None) -> list[LogRecord]:
    """Records of one partition from ``start`` (None: its log start) to before ``end``
    (None: its current high-water mark)."""
    from aiokafka.structs import TopicPartition

    tp = TopicPartition(topic, partition)
    consumer.assign([tp])
    if start is None:
        start = (await consumer.beginning_offsets([tp]))[tp]
    if end is None:
        end = (await consumer.end_offsets([tp]))[tp]
    out: list[LogRecord] = []
    if start >= end:
        return out
    consumer.seek(tp, start)
    while await consumer.position(tp) < end:
        batch = await consumer.getmany(tp, timeout_ms=1000)
        for rec in batch.get(tp, []):
            if start <= rec.offset < end:
                out.append(LogRecord(rec.offset, rec.key, rec.value,
                                     tuple((k, bytes(v)) for k, v in rec.headers or ()),
                                     int(rec.timestamp)))
    return out


async def _end(consumer: Any, topic: str, partition: int) -> int:
    from aiokafka.structs import TopicPartition

    tp = TopicPartition(topic, partition)
    return int((await consumer.end_offsets([tp]))[tp])


async def _partitions(admin: Any, topic: str) -> list[int]:
    described = await admin.describe_topics([topic])
    for d in described:
        if d.get("error_code", 0):
            raise LogRewriteError(f"topic {topic}: describe failed (error {d['error_code']})")
    return sorted(int(p["partition"]) for d in described for p in d["partitions"])


async def _topic_overrides(admin: Any, topic: str) -> dict[str, str]:
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    answer = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    out: dict[str, str] = {}
    for response in answer:
        for error, message, _type, _name, entries in response.resources:
            if error:
                raise LogRewriteError(f"topic {topic}: describe configs failed: {message}")
            out.update({e[0]: e[1] for e in entries if e[3] == _DYNAMIC_TOPIC_CONFIG})
    return out


async def _alter(admin: Any, topic: str, configs: dict[str, str]) -> None:
    """Set the topic's overrides to exactly ``configs`` (AlterConfigs replaces the set)."""
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    answer = await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                       configs)])
    for response in answer:
        for error, message, *_rest in response.resources:
            if error:
                raise LogRewriteError(f"topic {topic}: alter configs failed: {message}")


def report_dict(reports: Sequence[PartitionReport]) -> dict[str, Any]:
    """The reports as the forget response and ``breadcrumb log rewrite`` show them."""
    rewritten = [asdict(r) for r in reports if r.log_start is not None]
    return {"partitions_read": len(reports), "records_read": sum(r.read for r in reports),
            "erased": sum(r.erased for r in reports),
            "arrived_erased": sum(r.arrived_erased for r in reports), "rewritten": rewritten}


async def rewrite_log(settings: Any, store: Store,
                      max_rounds: int = MAX_ROUNDS) -> dict[str, Any]:
    """Rewrite ``agent-events``, ``agent-events-dlq`` and ``observations`` of ``settings``
    against the tombstones ``store`` reads (the control database in cluster mode)."""
    kafka = Kafka(settings.kafka_bootstrap, aiokafka_kwargs(settings))
    reports: list[PartitionReport] = []
    for name, kind in ((AGENT_EVENTS, EVENTS), (DEAD_LETTERS_TOPIC, DEAD_LETTERS),
                       (OBSERVATIONS_TOPIC, OBSERVATIONS)):
        reports += await rewrite_topic(kafka, settings.topic(name),
                                       tombstone_predicate(store.tombstones, kind), kind,
                                       max_rounds)
    return report_dict(reports)

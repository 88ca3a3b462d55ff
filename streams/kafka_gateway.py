"""Cluster-mode gateway: ``POST /v1/events`` publishes to Kafka (acks=all, idempotent).

aiokafka runs on a private event loop thread so the synchronous ``Gateway`` calls
work from the HTTP threadpool and from the CLI alike.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from breadcrumb.infra.settings import Settings
from breadcrumb.streams.gateway import SubmitResult, check_batch, limits_of
from breadcrumb.topics.names import AGENT_EVENTS, DEAD_LETTERS
from breadcrumb.topics.records import FlushMarker, thread_key

T = TypeVar("T")


class KafkaGateway:
    """Validates, dedupes against the store, and produces keyed ``{user_id}/{thread_id}``."""

    def __init__(self, settings: Settings, store: Any, clock: Callable[[], str]) -> None:
        self.settings = settings
        self.store = store  # MySqlStore: raw events (dedupe), dead letters, counters, state
        self.group = settings.worker_id  # the current generation's consumer group (lag)
        self.clock = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._producer: AIOKafkaProducer | None = None
        self._consumer: AIOKafkaConsumer | None = None  # end offsets, for the lag
        self._admin: AIOKafkaAdminClient | None = None  # committed offsets, for the lag

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self._loop is not None:
            return
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kafka-gateway",
                                        daemon=True)
        self._thread.start()
        self._run(self._start_producer())

    async def _start_producer(self) -> None:
        from breadcrumb.infra.cluster import declare_topics

        await declare_topics(self.settings)  # Faust never creates source topics; we do, once
        self._producer = AIOKafkaProducer(
            bootstrap_servers=self.settings.kafka_bootstrap,
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
        )
        await self._producer.start()

    def stop(self) -> None:
        if self._loop is None:
            return
        self._run(self._close_clients())
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        self._loop = None

    async def _close_clients(self) -> None:
        if self._producer is not None:
            await self._producer.stop()
        if self._consumer is not None:
            await self._consumer.stop()
        if self._admin is not None:
            await self._admin.close()

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        if self._loop is None:
            self.start()
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # ------------------------------------------------------------------ gateway
    def submit(self, items: Sequence[Any], source: str = "http") -> SubmitResult:
        """Accepted means acknowledged by every in-sync replica of ``agent-events``."""
        checked = check_batch(items, self.clock(), source, limits_of(self.settings))
        fresh: list[tuple[str, bytes]] = []
        seen: set[tuple[str, str]] = set()
        for event, raw in checked.valid:
            ident = (event.user_id, event.event_id)
            if ident in seen or self.store.get_event(event.user_id, event.event_id) is not None:
                continue
            seen.add(ident)
            fresh.append((event.thread_key, raw))
        letters = [orjson.dumps(letter.to_dict()) for letter in checked.letters]
        self._run(self._send(fresh, letters))
        for letter in checked.letters:
            self.store.put_dead_letter(letter)
        duplicates = len(checked.valid) - len(fresh)
        self.store.incr("events_received", len(items))
        self.store.incr("events_accepted", len(fresh))
        self.store.incr("duplicates", duplicates)
        return SubmitResult(len(fresh), duplicates, checked.rejected)

    async def _send(self, events: list[tuple[str, bytes]], letters: list[bytes]) -> None:
        assert self._producer is not None
        topic = self.settings.topic(AGENT_EVENTS)
        futures = [await self._producer.send(topic, raw, key=key.encode()) for key, raw in events]
        dlq = self.settings.topic(DEAD_LETTERS)
        futures += [await self._producer.send(dlq, raw) for raw in letters]
        await asyncio.gather(*futures)

    def request_flush(self, user_id: str, thread_id: str, reason: str = "flush") -> None:
        marker = orjson.dumps(FlushMarker(user_id, thread_id, self.clock(), reason).to_dict())
        self._run(self._send([(thread_key(user_id, thread_id), marker)], []))

    def unprocessed(self) -> int:
        """Consumer lag of the worker group on ``agent-events``."""
        return int(self._run(self._lag()))

    def pending(self) -> int:
        return self.unprocessed() + int(self.store.count_pending_window_events())

    def wait_processed(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.pending() > 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"events still pending after {timeout} s")
            time.sleep(0.25)

    def counters(self) -> dict[str, int]:
        values: dict[str, int] = self.store.get_counters()
        return values

    async def _lag(self) -> int:
        topic = self.settings.topic(AGENT_EVENTS)
        if self._consumer is None or self._admin is None:
            self._consumer = AIOKafkaConsumer(bootstrap_servers=self.settings.kafka_bootstrap)
            self._admin = AIOKafkaAdminClient(bootstrap_servers=self.settings.kafka_bootstrap)
            await self._consumer.start()
            await self._admin.start()
        described = await self._admin.describe_topics([topic])
        parts = [TopicPartition(topic, p["partition"]) for p in described[0]["partitions"]]
        ends = await self._consumer.end_offsets(parts)
        committed = await self._admin.list_consumer_group_offsets(self.group)
        lag = 0
        for tp in parts:
            meta = committed.get(tp)
            done = meta.offset if meta is not None and meta.offset >= 0 else 0
            lag += max(0, ends[tp] - done)
        return lag

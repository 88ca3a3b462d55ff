"""Cluster-mode gateway: ``POST /v1/events`` publishes to Kafka (acks=all, idempotent).

aiokafka runs on a private event loop thread so the synchronous ``Gateway`` calls
work from the HTTP threadpool and from the CLI alike.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from breadcrumb.settings import Settings
from breadcrumb.stores.ports.tables import Store
from breadcrumb.streams.erased import drop_erased
from breadcrumb.streams.failure_policy import describe, is_transient
from breadcrumb.streams.freshness import summary_from_counters
from breadcrumb.streams.gateway import SubmitResult, check_batch, limits_of
from breadcrumb.topics.kafka_security import aiokafka_kwargs, started
from breadcrumb.topics.loops import run_on
from breadcrumb.topics.names import AGENT_EVENTS, DEAD_LETTERS
from breadcrumb.topics.records import FlushMarker, thread_key

T = TypeVar("T")
log = logging.getLogger(__name__)


async def _quietly(coro: Any) -> None:
    try:
        await coro
    except Exception as exc:  # closing a client that never connected
        log.debug("closing a Kafka client failed: %s", exc)


class KafkaGateway:
    """Validates, dedupes against the store, and produces keyed ``{user_id}/{thread_id}``.

    Why so many methods: it is the Gateway port (submit, request_flush, pending,
    unprocessed, wait_processed, counters, freshness) plus what those need in cluster
    mode: the producer's start and stop, settling counters and letters owed from a SQL
    outage, and the admin clients that read the consumer lag for pending.
    """

    LAG_TIMEOUT = 10.0  # seconds for one lag read (stats must answer while Kafka is down)

    def __init__(self, settings: Settings, store: Store, clock: Callable[[], str],
                 declare: Callable[[], Awaitable[None]] | None = None) -> None:
        self.settings = settings
        self.declare = declare  # creates the source topics (Faust never does); infra passes it
        self.store = store  # MySqlStore: raw events (dedupe), dead letters, counters, state
        self.group = settings.worker_id  # the current generation's consumer group (lag)
        self.clock = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._producer: AIOKafkaProducer | None = None
        self._consumer: AIOKafkaConsumer | None = None  # end offsets, for the lag
        self._admin: AIOKafkaAdminClient | None = None  # committed offsets, for the lag
        self._last_lag = 0
        self.lag_error: str | None = None
        self.sql_error: str | None = None  # why the SQL store cannot be written now
        self._owed: dict[str, int] = {}  # counters not yet written (the store was down)
        self._owed_letters: list[Any] = []
        self._owed_lock = threading.Lock()
        self._settling = threading.Lock()
        self.lag_errors = 0

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
        if self.declare is not None:
            await self.declare()  # Faust never creates source topics; we do, once
        self._producer = await started(AIOKafkaProducer(
            bootstrap_servers=self.settings.kafka_bootstrap,
            **aiokafka_kwargs(self.settings),
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
        ))

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
        await self._stop_lag_clients()  # a later start() builds new ones on its new loop

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        if self._loop is None:
            self.start()
        assert self._loop is not None
        return run_on(self._loop, coro, timeout)

    # ------------------------------------------------------------------ gateway
    def submit(self, items: Sequence[Any], source: str = "http") -> SubmitResult:
        """Accepted means acknowledged by every in-sync replica of ``agent-events``.

        The SQL store is not needed to accept: while it is unreachable the dedupe against
        stored events is skipped (the worker stores an event id once) and the counters and
        rejected events' letters wait here until it answers again (issue 30)."""
        checked = check_batch(items, self.clock(), source, limits_of(self.settings))
        sql_up = True
        try:  # issue 26: forgotten scopes never reach the log
            checked = drop_erased(self.store.tombstones, checked, len(items))
        except Exception as exc:
            if not is_transient(exc):
                raise
            sql_up = False  # SQL is down (issue 30): accept; the worker drops erased ones
        fresh: list[tuple[str, bytes]] = []
        seen: set[tuple[str, str]] = set()
        for event, raw in checked.valid:
            ident = (event.user_id, event.event_id)
            if ident in seen:
                continue
            if sql_up:
                try:
                    if self.store.events.get_event(event.user_id, event.event_id) is not None:
                        continue
                except Exception as exc:
                    if not is_transient(exc):
                        raise
                    sql_up = False
            seen.add(ident)
            fresh.append((event.thread_key, raw))
        letters = [orjson.dumps(letter.to_dict()) for letter in checked.letters]
        self._run(self._send(fresh, letters))
        duplicates = len(checked.valid) - len(fresh)
        with self._owed_lock:
            self._owed_letters.extend(checked.letters)
            for name, n in (("events_received", len(items)), ("events_accepted", len(fresh)),
                            ("duplicates", duplicates)):
                self._owed[name] = self._owed.get(name, 0) + n
        self.settle()
        return SubmitResult(len(fresh), duplicates, checked.rejected)

    def settle(self) -> bool:
        """Write the counters and letters owed to the SQL store; False (kept for the next
        call, said once per outage) while it cannot be reached. One caller at a time; the
        others return at once (the one settling writes what they added)."""
        if not self._settling.acquire(blocking=False):
            return False
        try:
            while True:
                with self._owed_lock:
                    letter = self._owed_letters[0] if self._owed_letters else None
                    name = next(iter(self._owed), None) if letter is None else None
                    n = self._owed.get(name, 0) if name is not None else 0
                if letter is None and name is None:
                    break
                if letter is not None:
                    self.store.dead_letters.put_dead_letter(letter)
                elif name is not None and n:
                    self.store.counters.incr(name, n)
                with self._owed_lock:
                    if letter is not None:
                        self._owed_letters.pop(0)
                    elif name is not None:
                        self._owed[name] -= n
                        if not self._owed[name]:
                            del self._owed[name]
        except Exception as exc:
            if not is_transient(exc):
                raise
            if self.sql_error is None:
                log.warning("SQL store unavailable (%s): events are still accepted onto "
                            "Kafka; counters and letters are written when it answers",
                            " ".join(describe(exc).split()))
            self.sql_error = describe(exc)
            return False
        finally:
            self._settling.release()
        if self.sql_error is not None:
            log.info("SQL store answers again: owed counters and letters written")
            self.sql_error = None
        return True

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
        """Consumer lag of the worker group on ``agent-events``. While Kafka cannot be
        reached this is the last lag read (``lag_error`` says why); stats keep answering."""
        try:
            self._last_lag = int(self._run(self._lag(), timeout=self.LAG_TIMEOUT))
            self.lag_error = None
        except Exception as exc:
            self.lag_errors += 1
            self.lag_error = f"{type(exc).__name__}: {exc}"
            log.warning("consumer lag unavailable (reporting the last value, %s): %s",
                        self._last_lag, self.lag_error)
        return self._last_lag

    def pending(self) -> int:
        return self.unprocessed() + int(self.store.states.count_pending_window_events())

    def wait_processed(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout

        def pending() -> int:  # strict: an unknown lag is not "nothing pending"
            lag = int(self._run(self._lag(), timeout=self.LAG_TIMEOUT))
            return lag + int(self.store.states.count_pending_window_events())
        while pending() > 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"events still pending after {timeout} s")
            time.sleep(0.25)

    def freshness(self) -> dict[str, Any]:
        """Issue 14: accepted → recallable / memory p50 / p95 of every worker (the
        histogram counters the workers' batches write, ``streams.freshness``)."""
        return summary_from_counters(self.store.counters.get_counters())

    def counters(self) -> dict[str, int]:
        values: dict[str, int] = self.store.counters.get_counters()
        values["lag_errors"] = self.lag_errors
        return values

    async def _start_lag_clients(self) -> None:
        """Both clients started, or neither kept (a failed start is retried next call)."""
        security = aiokafka_kwargs(self.settings)
        consumer = AIOKafkaConsumer(bootstrap_servers=self.settings.kafka_bootstrap,
                                    request_timeout_ms=int(self.LAG_TIMEOUT * 1000), **security)
        admin = AIOKafkaAdminClient(bootstrap_servers=self.settings.kafka_bootstrap,
                                    request_timeout_ms=int(self.LAG_TIMEOUT * 1000), **security)
        try:
            await consumer.start()
            await admin.start()
        except BaseException:
            await _quietly(consumer.stop())
            await _quietly(admin.close())
            raise
        self._consumer, self._admin = consumer, admin

    async def _stop_lag_clients(self) -> None:
        consumer, admin, self._consumer, self._admin = self._consumer, self._admin, None, None
        if consumer is not None:
            await _quietly(consumer.stop())
        if admin is not None:
            await _quietly(admin.close())

    async def _lag(self) -> int:
        topic = self.settings.topic(AGENT_EVENTS)
        if self._consumer is None or self._admin is None:
            await self._start_lag_clients()
        assert self._consumer is not None and self._admin is not None
        try:
            described = await self._admin.describe_topics([topic])
            parts = [TopicPartition(topic, p["partition"]) for p in described[0]["partitions"]]
            ends = await self._consumer.end_offsets(parts)
            committed = await self._admin.list_consumer_group_offsets(self.group)
        except Exception:
            await self._stop_lag_clients()  # rebuilt on the next call
            raise
        lag = 0
        for tp in parts:
            meta = committed.get(tp)
            done = meta.offset if meta is not None and meta.offset >= 0 else 0
            lag += max(0, ends[tp] - done)
        return lag

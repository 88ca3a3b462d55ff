"""Publishers: put agent events on ``agent-events`` (Kafka) or ``POST /v1/events``.

(The friendly client is :mod:`breadcrumb.sdk`, which re-exports everything here.) This
module imports only the standard library; aiokafka, orjson and the contract validator are
imported when first used, so an HTTP-only install needs none of them.

``Publisher`` is an idempotent aiokafka producer (``acks="all"``) keyed
``{user_id}/{thread_id}`` so a thread keeps its order in one partition;
``HttpPublisher`` (:mod:`.publishers_http`, httpx) batches events to the query service
for agents without Kafka access; ``SyncPublisher`` runs either one on a private event
loop for scripts. Every event is validated against the contract before it leaves the
process: an invalid event raises :class:`InvalidEventError` naming the field and is never sent.

    async with Publisher("127.0.0.1:9092") as pub:
        await pub.publish({"event_id": "e1", "user_id": "u1", "thread_id": "t1", ...})
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from breadcrumb.streams.tracking import DIRECT_HEADER
from breadcrumb.topics.loops import run_on
from breadcrumb.topics.names import AGENT_EVENTS
from breadcrumb.topics.records import thread_key

if TYPE_CHECKING:
    from aiokafka import AIOKafkaProducer

    from breadcrumb.settings import Settings

T = TypeVar("T")


def _kafka_error() -> type[BaseException]:
    from aiokafka.errors import KafkaError

    return KafkaError


def plainly_valid(data: Any) -> bool:
    """The contract's cheap check for a well-formed event (see processors.validate)."""
    from breadcrumb.processors.validate import plainly_valid as check

    return check(data)


def dumps(value: Any) -> bytes:
    """Compact JSON (orjson when installed: the Kafka path has it)."""
    try:
        import orjson
    except ImportError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return orjson.dumps(value)


#: what a 401 tells the caller to do
KEY_HINT = "pass api_key= (CLI: --api-key) or set BREADCRUMB_API_KEY"


def auth_headers(api_key: str | None = None) -> dict[str, str]:
    """``Authorization: Bearer …`` from ``api_key`` or ``BREADCRUMB_API_KEY``, if any."""
    key = api_key or os.environ.get("BREADCRUMB_API_KEY")
    return {"authorization": f"Bearer {key}"} if key else {}


class PublishError(RuntimeError):
    """An event could not be delivered (after retries, or for a non-retriable reason)."""


class InvalidEventError(PublishError, ValueError):
    """The event breaks the contract; it was not sent."""

    def __init__(self, message: str, field: str | None = None, position: int | None = None):
        super().__init__(message)
        self.field = field
        self.position = position


@dataclass(frozen=True, slots=True)
class PublishReceipt:
    """Where Kafka stored an event."""

    event_id: str
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff: ``base * 2**attempt`` seconds, capped, ``retries`` re-tries."""

    retries: int = 5
    base: float = 0.1
    cap: float = 5.0

    def delay(self, attempt: int) -> float:
        return float(min(self.cap, self.base * (2**attempt)))


class IndexCounters:
    """Per-thread counters for producers that set ``index`` themselves.

    An event without an index gets the thread's next one; an explicit index moves the
    counter past it. Seed with ``start`` (``{(user_id, thread_id): next_index}``) when
    resuming a thread that already has events.
    """

    def __init__(self, start: Mapping[tuple[str, str], int] | None = None) -> None:
        self._next: dict[tuple[str, str], int] = dict(start or {})

    def assign(self, event: dict[str, Any]) -> dict[str, Any]:
        key = (str(event.get("user_id")), str(event.get("thread_id")))
        given = event.get("index")
        index = given if isinstance(given, int) else self._next.get(key, 0)
        self._next[key] = max(self._next.get(key, 0), index + 1)
        return event if given is not None else {**event, "index": index}

    def next_index(self, user_id: str, thread_id: str) -> int:
        return self._next.get((user_id, thread_id), 0)


def checked(event: Mapping[str, Any], position: int | None = None) -> dict[str, Any]:
    """The event as a plain dict if it satisfies the contract, else ``InvalidEventError``.

    :func:`plainly_valid` accepts the common well-formed event cheaply; anything it
    does not accept goes through ``validate_event``, which decides and names the field.
    """
    from breadcrumb.processors.validate import Rejection, validate_event

    data: Any = dict(event) if isinstance(event, Mapping) else event
    if plainly_valid(data):
        result: dict[str, Any] = data
        return result
    outcome = validate_event(data)
    if isinstance(outcome, Rejection):
        ident = data.get("event_id") if isinstance(data, dict) else None
        where = f"event {position}" if position is not None else "event"
        label = f"{where} ({ident})" if isinstance(ident, str) else where
        raise InvalidEventError(f"{label}: {outcome.message()}", outcome.field, position)
    return dict(data)


_DIRECT = [(DIRECT_HEADER, b"1")]


def _retriable(exc: BaseException) -> bool:
    from aiokafka.errors import KafkaTimeoutError

    return isinstance(exc, KafkaTimeoutError) or bool(getattr(exc, "retriable", False))


class Publisher:
    """Async, idempotent, batched Kafka publisher for agent events."""

    def __init__(
        self,
        bootstrap: str | None = None,
        *,
        topic: str | None = None,
        settings: Settings | None = None,
        linger_ms: int = 5,
        max_batch_size: int = 256 * 1024,
        backoff: Backoff | None = None,
        index_counters: IndexCounters | None = None,
        request_timeout_ms: int = 30_000,
    ) -> None:
        from breadcrumb.extras import require

        require("aiokafka")  # the [kafka] extra; says so when missing
        if settings is None:
            prefix = os.environ.get("BREADCRUMB_TOPIC_PREFIX", "")
            self.bootstrap = bootstrap or os.environ.get("BREADCRUMB_KAFKA_BOOTSTRAP",
                                                         "127.0.0.1:9092")
            self.topic = topic or f"{prefix}{AGENT_EVENTS}"
        else:
            self.bootstrap = bootstrap or settings.kafka_bootstrap
            self.topic = topic or settings.topic(AGENT_EVENTS)
        self.backoff = backoff or Backoff()
        self.counters = index_counters
        self._options = {"linger_ms": linger_ms, "max_batch_size": max_batch_size,
                         "request_timeout_ms": request_timeout_ms}
        self._producer: AIOKafkaProducer | None = None
        self.retried = 0  # sends repeated after a retriable error (visible, counted)

    async def __aenter__(self) -> Publisher:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Connect, retrying with backoff while the cluster is unreachable."""
        from aiokafka import AIOKafkaProducer

        from breadcrumb.topics.kafka_security import started

        KafkaError = _kafka_error()  # noqa: N806 - an exception class, imported late
        for attempt in range(self.backoff.retries + 1):
            try:  # a producer that fails to start is stopped by started()
                self._producer = await started(AIOKafkaProducer(
                    bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True,
                    **self._options))
                return
            except KafkaError as exc:
                if not _retriable(exc) or attempt == self.backoff.retries:
                    raise PublishError(f"cannot connect to Kafka at {self.bootstrap}: "
                                       f"{exc!r}") from exc
                await asyncio.sleep(self.backoff.delay(attempt))

    async def stop(self) -> None:
        """Deliver what is buffered and disconnect."""
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None

    def prepare(self, events: Iterable[Mapping[str, Any]]) -> list[tuple[str, bytes, bytes]]:
        """Validate all, then index (when counters are on): ``[(event_id, key, value)]``."""
        valid = [checked(event, position) for position, event in enumerate(events)]
        if self.counters is not None:
            valid = [checked(self.counters.assign(data), i) for i, data in enumerate(valid)]
        return [(data["event_id"], thread_key(data["user_id"], data["thread_id"]).encode(),
                 dumps(data)) for data in valid]

    async def publish(self, event: Mapping[str, Any]) -> PublishReceipt:
        """Send one event and wait until every in-sync replica has it."""
        return (await self.publish_many([event]))[0]

    async def publish_many(self, events: Iterable[Mapping[str, Any]]) -> list[PublishReceipt]:
        """Validate every event first (none is sent if one is invalid), then send in order."""
        return await self.send_prepared(self.prepare(events))

    async def send_prepared(self, prepared: list[tuple[str, bytes, bytes]]) -> list[
            PublishReceipt]:
        """Enqueue in order (one partition per thread keeps it), then await the acks."""
        pending = list(range(len(prepared)))
        receipts: list[PublishReceipt | None] = [None] * len(prepared)
        for attempt in range(self.backoff.retries + 1):
            failures = await self._attempt(prepared, pending, receipts)
            if not failures:
                return [r for r in receipts if r is not None]
            fatal = [exc for _, exc in failures if not _retriable(exc)]
            if fatal or attempt == self.backoff.retries:
                position, exc = failures[0]
                raise PublishError(f"event {prepared[position][0]} to {self.topic}: {exc!r} "
                                   f"({len(failures)} undelivered)") from exc
            pending = [position for position, _ in failures]
            self.retried += len(pending)
            await asyncio.sleep(self.backoff.delay(attempt))
        raise AssertionError("unreachable")

    async def _attempt(self, prepared: list[tuple[str, bytes, bytes]], pending: list[int],
                       receipts: list[PublishReceipt | None]) -> list[tuple[int, BaseException]]:
        producer = self._require()
        KafkaError = _kafka_error()  # noqa: N806 - an exception class, imported late
        futures: list[tuple[int, asyncio.Future[Any]]] = []
        failures: list[tuple[int, BaseException]] = []
        for position in pending:
            event_id, key, value = prepared[position]
            try:
                # the header: no gateway counted it, the worker counts it as received
                futures.append((position, await producer.send(self.topic, value, key=key,
                                                              headers=_DIRECT)))
            except KafkaError as exc:
                failures.append((position, exc))
        for position, future in futures:
            try:
                meta = await future
            except KafkaError as exc:
                failures.append((position, exc))
                continue
            receipts[position] = PublishReceipt(prepared[position][0], meta.topic,
                                                meta.partition, meta.offset)
        return sorted(failures, key=lambda item: item[0])

    def _require(self) -> AIOKafkaProducer:
        if self._producer is None:
            raise PublishError("Publisher is not started: use 'async with Publisher(...)'")
        return self._producer


class _AsyncPublisher(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def publish_many(self, events: Iterable[Mapping[str, Any]]) -> Any: ...


class SyncPublisher:
    """Blocking wrapper for scripts: runs an async publisher on a private loop thread.

        with SyncPublisher(Publisher("127.0.0.1:9092")) as pub:
            pub.publish_many(events)
    """

    def __init__(self, inner: _AsyncPublisher, timeout: float = 120.0) -> None:
        self.inner = inner
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sync-publisher",
                                        daemon=True)
        self._thread.start()
        self._started = False

    def __enter__(self) -> SyncPublisher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return run_on(self._loop, coro, self.timeout)

    def start(self) -> None:
        if not self._started:
            self._run(self.inner.start())
            self._started = True

    def publish(self, event: Mapping[str, Any]) -> Any:
        """Send one event; returns what the inner publisher returns for a batch of one."""
        result = self.publish_many([event])
        return result[0] if isinstance(result, list) else result

    def publish_many(self, events: Iterable[Mapping[str, Any]]) -> Any:
        self.start()
        return self._run(self.inner.publish_many(list(events)))

    def close(self) -> None:
        """Flush, disconnect and stop the loop thread."""
        if self._started:
            self._run(self.inner.stop())
            self._started = False
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

"""The cluster ingest agent as a small class: handle / publish / flush idle / follow alias.

Faust only feeds it (``streams.kafka.app``); tests call its methods directly with
in-memory stores and a list for the topics.

Per-thread segment state lives in the SQL store only: read and written inside the
message's own transaction, so after a ``kill -9`` the next message sees exactly the
state of the last committed one, and a rebalance has nothing to recover (no Faust
table, no changelog; see ``streams.kafka.app`` for why that matters).

Every message ends applied or dead-lettered, never skipped: it is decoded once
(``streams.kafka.messages``) and applied as a unit of work of the ingest core
(``streams.ingest_core``) under its failure policy (transient → retried with backoff until
the store is back, permanent → dead-lettered after a few attempts with the reason and the
message's position), and the caller acknowledges the message only after :meth:`handle`
returns. Poison (undecodable bytes, a tombstone, a flush marker without its thread, an
event under another thread's key, a schema-invalid event) is dead-lettered at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager
from functools import partial
from typing import Any, Protocol, TypeVar

import orjson

from breadcrumb.stores.sql.raw_batch import BatchedRawEvents
from breadcrumb.streams.failure_policy import FailurePolicy, describe
from breadcrumb.streams.ingest_core import Item, PositionedLetters, Retrying, UnitOfWork, UnitResult
from breadcrumb.streams.kafka.messages import Message, decode, poison_reason  # noqa: F401 (re-export)
from breadcrumb.streams.service import IngestService
from breadcrumb.streams.state import DictStateStore
from breadcrumb.streams.tracking import IdleTracker, KafkaOffsets
from breadcrumb.topics.records import (
    FlushMarker,
    MemoryStatusChange,
    Observation,
    split_thread_key,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
#: Logical topics the agent sends to (the sink maps them to real ones).
EVENTS, OBSERVATIONS, STATUS, DEAD_LETTERS = "events", "observations", "status", "dead_letters"


class Sink(Protocol):
    """Where the agent's output goes: Faust topics in the app, a list in tests."""

    async def send(self, topic: str, key: bytes | None, value: bytes | None) -> None: ...


class IngestAgent:
    """Messages in → units of work (``streams.ingest_core``) → observations / status /
    dead letters out.

    Why so many methods: it is the cluster agent's whole surface (handle, publish, flush
    idle, follow the alias, sweep), each a few lines that hand work to the ingest core,
    kept on one object so tests drive it directly with in-memory stores.
    """

    def __init__(self, parts: Any, sink: Sink, idle: IdleTracker,
                 policy: FailurePolicy | None = None, executor: Executor | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 owns: Callable[[str], bool] | None = None) -> None:
        self.parts = parts  # infra.cluster.WorkerParts: store, service_for, lifecycle, ...
        self.sink = sink
        self.idle = idle
        # whether a thread key's partition is assigned to this worker (idle flushes only
        # for threads it consumes; another worker's active thread is not idle)
        self.owns = owns or (lambda _key: True)
        self.policy = policy or FailurePolicy()
        self.retrying = Retrying(self.policy)
        self.executor = executor
        self.sleep = sleep
        self.errors: dict[str, int] = {}  # timer / publish errors survived, by name

    # ------------------------------------------------------------------ messages
    async def handle(self, key: bytes | None, value: bytes | None, position: str,
                     direct: bool = False) -> str:
        """Apply one message or dead-letter it; returns the outcome. Raises only when
        cancelled (then the message must not be acknowledged). ``direct``: published
        straight to Kafka (no gateway counted it as received)."""
        return await self.handle_item(decode(Message(key, value, position, direct)))

    async def handle_item(self, item: Item) -> str:
        """One decoded message under the failure policy: applied, or retried (transient
        errors for as long as it takes), or dead-lettered; then its output published."""
        with self.idle.handling(item.key):
            result = await self._until_done(item)
            await self.publish_unit(result)
        if item.poison is None:
            self.idle.touch(item.key, item.entry)
        return result.outcomes[0]

    async def _until_done(self, item: Item) -> UnitResult:
        """:meth:`Retrying.attempt` in the executor until it returns; the waits are awaited
        here (a shutdown cancels them)."""
        unit = self.unit()
        apply, give_up = partial(unit.apply_one, item), partial(unit.give_up, item)
        while True:
            try:
                return await self.run_blocking(self.retrying.attempt, item.position, apply,
                                               give_up)
            except Exception:  # logged by Retrying.attempt; the policy's delay, then again
                await self.sleep(self.retrying.delay)

    def unit(self) -> UnitOfWork:
        """A unit of work on this worker's SQL store (its cursor, made for each
        transaction, reads the consumed-through marks inside it)."""
        store = self.parts.store
        return UnitOfWork(store, self._scope, partial(KafkaOffsets, store), read_ahead=False)

    @contextmanager
    def _scope(self, items: Sequence[Item], letters: PositionedLetters, keep: bool
               ) -> Iterator[IngestService]:
        """The unit's transaction: each thread's state read from SQL inside it (the last
        committed one, whatever crashed since) and written back once; the raw events
        looked up with one statement and inserted with one. The service is built for the
        unit over those batching wrappers (nothing is swapped in later); ``keep`` False
        rolls the transaction back (a rehearsal)."""
        store = self.parts.store
        keys = sorted({i.key for i in items if i.key})
        local, mirror, raw = DictStateStore(), DictStateStore(), BatchedRawEvents(store.events)
        service: IngestService = self.parts.service_for(local, letters, mirror=mirror, raw=raw)
        users = {split_thread_key(k)[0] for k in keys}
        with store.serialized(users), store.transaction(keep):  # users: SqlStore.serialized
            raw.prefetch(ids for i in items if (ids := i.event_ids))
            for key, committed in store.states.get_states(keys).items():
                local.put_state(key, committed)
            yield service
            raw.flush()
            store.states.put_states(sorted(mirror.data.items()))

    async def run_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the ingest executor (one thread: messages keep their order)."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def publish_unit(self, result: UnitResult) -> None:
        """A committed unit's memories and letters, then the lifecycle's changes, each
        retried until sent."""
        await self._retrying("publish", lambda: self.publish(result.observations,
                                                             result.letters))
        await self._retrying("publish", self.publish_lifecycle)

    async def _retrying(self, name: str, step: Callable[[], Awaitable[T]]) -> T:
        """Run ``step`` until it succeeds; only transient errors are expected here (a
        permanent one is logged and retried too: giving up would lose the message)."""
        attempt = 0
        while True:
            try:
                return await step()
            except Exception as exc:
                attempt += 1
                self.errors[name] = self.errors.get(name, 0) + 1
                delay = self.policy.backoff(attempt)
                log.warning("%s failed (attempt %s); retrying in %.1f s: %s", name, attempt,
                            delay, describe(exc))
                await self.sleep(delay)

    # ------------------------------------------------------------------ output
    async def publish(self, observed: list[Observation], letters: list[bytes]) -> None:
        """New memories to ``observations`` + ``memory-status``; letters to the DLQ topic.
        Only the current generation's worker publishes."""
        if not self.parts.publishing:
            return
        for obs in observed:
            await self.sink.send(OBSERVATIONS, obs.id.encode(), orjson.dumps(obs.to_dict()))
            change = MemoryStatusChange(obs.id, obs.user_id, obs.status, obs.tier,
                                        obs.created_at, "pipeline", "created")
            await self.sink.send(STATUS, obs.id.encode(), orjson.dumps(change.to_dict()))
        for letter in letters:
            await self.sink.send(DEAD_LETTERS, None, letter)

    async def publish_lifecycle(self) -> None:
        """Lifecycle changes collected while handling (after "created", so compaction
        keeps ours)."""
        if self.parts.lifecycle is None:
            return
        drained = self.parts.lifecycle.publisher.drain()
        if not self.parts.publishing:
            return  # a generation being built: the live topics already hold these
        for memory_id, value in drained:
            data = None if value is None else orjson.dumps(value)
            await self.sink.send(STATUS, memory_id.encode(), data)

    # ------------------------------------------------------------------ timers
    async def guarded(self, name: str, step: Callable[[], Awaitable[Any]]) -> None:
        """A timer body that must not stop the app: errors are logged, counted, and the
        next tick retries."""
        try:
            await step()
        except Exception as exc:
            self.errors[name] = self.errors.get(name, 0) + 1
            log.warning("%s failed (will retry on the next tick): %s", name, describe(exc))

    async def flush_idle(self) -> int:
        """Send a keyed flush marker for every idle thread with an open window that this
        worker consumes (the marker goes through the topic, so it is handled in order
        with the thread's events, by whichever worker owns the thread by then)."""
        if not self.parts.publishing:
            return 0  # a replayed generation gets the live worker's markers from the log
        # not in the ingest executor: the scan must not wait behind a backlog of messages
        loop = asyncio.get_running_loop()
        for key in await loop.run_in_executor(None, self.open_windows):
            if self.owns(key):
                self.idle.adopt(key)  # open window found after a restart: start its clock
        sent = 0
        for key in self.idle.due():
            if not self.owns(key):
                continue  # its partition moved to another worker, which keeps the clock
            user_id, thread_id = split_thread_key(key)
            marker = FlushMarker(user_id, thread_id, self.parts.clock(), "idle")
            await self.sink.send(EVENTS, key.encode(), orjson.dumps(marker.to_dict()))
            sent += 1
        return sent

    def open_windows(self) -> list[str]:
        return [key for key, _state in self.parts.store.states.list_states(pending_only=True)]

    async def follow_alias(self) -> bool:
        """Publish only while this worker's generation is the current one; returns
        whether it publishes."""
        parts = self.parts
        if parts.catalog is None:
            return bool(parts.publishing)
        # not in the ingest executor: a slow message must not delay the alias check
        current = await asyncio.get_running_loop().run_in_executor(None, parts.catalog.current)
        if (current == parts.generation) != parts.publishing:
            log.warning("generation %s is %s current (alias: %s)", parts.generation,
                        "now" if current == parts.generation else "no longer", current)
            parts.publishing = current == parts.generation
        return bool(parts.publishing)

    async def sweep(self) -> None:
        """The lifecycle sweeper (tiers, archive); its changes go to memory-status."""
        if self.parts.lifecycle is None or not self.parts.publishing:
            return
        await self.run_blocking(self.parts.lifecycle.sweep)
        await self.publish_lifecycle()

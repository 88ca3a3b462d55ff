"""The cluster ingest agent as a small class: handle / publish / flush idle / follow alias.

Faust only feeds it (``streams.faust_app``); tests call its methods directly with
in-memory stores and a list for the topics.

Per-thread segment state lives in the SQL store only: read and written inside the
message's own transaction, so after a ``kill -9`` the next message sees exactly the
state of the last committed one, and a rebalance has nothing to recover (no Faust
table, no changelog; see ``streams.faust_app`` for why that matters).

Every message ends applied or dead-lettered, never skipped: errors go through the
:class:`~streams.failure_policy.FailurePolicy` (transient → retried with backoff until the
store is back, permanent → dead-lettered after a few attempts with the reason and the
message's position), and the caller acknowledges the message only after :meth:`handle`
returns. Poison (undecodable bytes, a tombstone, a flush marker without its thread, an
event under another thread's key, a schema-invalid event) is dead-lettered at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from functools import partial
from typing import Any, Protocol, TypeVar

import orjson

from breadcrumb.processors.validate import Rejection, validate_event
from breadcrumb.streams.failure_policy import FailurePolicy, describe
from breadcrumb.streams.service import HandleResult, IngestService
from breadcrumb.streams.state import CapturingDeadLetters, DictStateStore
from breadcrumb.streams.tracking import IdleTracker, count_message, first_consumption
from breadcrumb.topics.records import (
    FlushMarker,
    MemoryStatusChange,
    Observation,
    split_thread_key,
    thread_key,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
#: Logical topics the agent sends to (the sink maps them to real ones).
EVENTS, OBSERVATIONS, STATUS, DEAD_LETTERS = "events", "observations", "status", "dead_letters"


class Sink(Protocol):
    """Where the agent's output goes: Faust topics in the app, a list in tests."""

    async def send(self, topic: str, key: bytes | None, value: bytes | None) -> None: ...


def poison_reason(key: str, entry: Any) -> str | None:
    """Why a decoded message cannot be handled under its key (None: it can)."""
    if not isinstance(entry, dict):
        return None  # the schema validation rejects it with its own reason
    user_id, thread_id = entry.get("user_id"), entry.get("thread_id")
    flush = FlushMarker.is_flush(entry)
    if flush and (not isinstance(user_id, str) or not user_id or not isinstance(thread_id, str)):
        return "flush marker without user_id / thread_id"
    own = thread_key(str(user_id), str(thread_id))
    if own == key:
        return None
    if not flush and isinstance(validate_event(entry), Rejection):
        return None  # an invalid event: the service rejects it naming the field
    return f"message of thread {own!r} under key {key!r} (state is kept per key)"


class IngestAgent:
    """One message in → stores updated → observations / status / dead letters out."""

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
        self.executor = executor
        self.sleep = sleep
        self.errors: dict[str, int] = {}  # timer / publish errors survived, by name

    # ------------------------------------------------------------------ messages
    async def handle(self, key: bytes | None, value: bytes | None, position: str,
                     direct: bool = False) -> str:
        """Apply one message or dead-letter it; returns the outcome. Raises only when
        cancelled (then the message must not be acknowledged). ``direct``: published
        straight to Kafka (no gateway counted it as received)."""
        key_text = key.decode("utf-8", "replace") if key else ""
        text = "" if value is None else value.decode("utf-8", "replace")
        entry: Any = None
        poison: str | None = "tombstone (a message without a value)" if value is None else None
        if value is not None:
            try:
                entry = orjson.loads(value)
            except orjson.JSONDecodeError:
                poison = "value is not JSON"
            else:
                poison = poison_reason(key_text, entry)
        with self.idle.handling(key_text):
            result, letters = await self._apply_or_dead_letter(
                entry, text, key_text, position, poison, direct)
            await self._retrying("publish", lambda: self.publish(result.observations,
                                                                 letters.captured))
            await self._retrying("publish", self.publish_lifecycle)
        if poison is None:
            self.idle.touch(key_text, entry)
        return result.outcome

    async def _apply_or_dead_letter(self, entry: Any, text: str, key: str, position: str,
                                    poison: str | None, direct: bool) -> tuple[
                                        HandleResult, CapturingDeadLetters]:
        attempts = 0
        while True:
            try:
                return await self._run(self._apply, entry, text, key, position, poison,
                                       attempts, direct)
            except Exception as exc:
                attempts += 1
                decision = self.policy.decide(exc, attempts)
                if decision.retry:
                    log.warning("message %s failed (attempt %s, %s); retrying in %.1f s: %s",
                                position, attempts, "transient" if decision.transient
                                else "permanent", decision.delay, decision.reason)
                    await self.sleep(decision.delay)
                    continue
                log.error("dead-lettering message %s: %s", position, decision.reason)
                letters = await self._retrying("dead_letter", partial(
                    self._run, self._dead_letter, text, entry, position, decision.reason,
                    attempts, direct))
                return HandleResult("dead_lettered", reason=decision.reason), letters

    def _apply(self, entry: Any, text: str, key: str, position: str, poison: str | None,
               retries: int, direct: bool) -> tuple[HandleResult, CapturingDeadLetters]:
        """In the executor: one SQL transaction for the message, its thread state and its
        counters. The state is read from SQL inside that transaction, so it is the one
        committed with the previous message of the thread, whatever crashed since."""
        letters = CapturingDeadLetters(self.parts.store, position)
        users = [split_thread_key(key)[0]] if key else []  # see SqlStore.serialized
        with self.parts.store.serialized(users), self.parts.store.transaction():
            committed = self.parts.store.get_state(key) if key else None
            local = DictStateStore({key: committed} if committed is not None else {})
            service: IngestService = self.parts.service_for(local, letters)
            if poison is not None:
                result = service.reject(f"{poison} (at {position})", None, text,
                                        entry if isinstance(entry, dict) else None)
            else:
                result = service.handle(entry, text)  # a rejection is keyed by position
            first = first_consumption(self.parts.store, position)
            count_message(self.parts.store, result.outcome, retries, first, direct)
        return result, letters

    def _dead_letter(self, text: str, entry: Any, position: str, reason: str,
                     attempts: int, direct: bool) -> CapturingDeadLetters:
        letters = CapturingDeadLetters(self.parts.store, position)
        service: IngestService = self.parts.service_for(DictStateStore(), letters)
        with self.parts.store.transaction():
            service.reject(f"{reason} (at {position})", None, text,
                           entry if isinstance(entry, dict) else None)
            first = first_consumption(self.parts.store, position)
            count_message(self.parts.store, "dead_lettered", attempts - 1, first, direct)
        return letters

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

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
        for key in await loop.run_in_executor(None, self._open_windows):
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

    def _open_windows(self) -> list[str]:
        return [key for key, _state in self.parts.store.list_states(pending_only=True)]

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
        await self._run(self.parts.lifecycle.sweep)
        await self.publish_lifecycle()

"""Cluster mode, micro-batched: many Kafka messages applied as ONE batch by the ingest agent.

The Faust app takes up to ``derive_batch_entries`` messages or ``derive_batch_max_ms`` of
waiting (``stream.noack_take``) and hands them to :class:`BatchIngest`, which applies them
in arrival order (so each thread — one key, one partition — keeps its order) with

* one SQL transaction: the raw events (looked up with one statement and inserted with
  one ``executemany``, ``stores.raw_batch``), the thread states (read from SQL inside the
  transaction with one statement and written with one, not once per event), the counters
  (one statement for all, each message counted once by its Kafka position), the memories
  and chunks;
* one embedding call for the texts of every range closed in the batch, across threads,
  and one vector upsert (``IngestService.batched``, as the embedded runner does);
* the output topics and the acknowledgements only after the commit.

When the batch fails, nothing of it is committed and its messages are handed one at a
time to :meth:`IngestAgent.handle`, i.e. to the one failure policy: a poison message is
dead-lettered with its position and the others are applied. Writes are idempotent (event
ids, memory ids, vector ids, dead letters keyed by position), so a crash between the
commit and the acknowledgement only redelivers messages that then change nothing.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import orjson

from breadcrumb.stores.raw_batch import BatchedRawEvents
from breadcrumb.streams.failure_policy import kafka_position
from breadcrumb.streams.faust_agent import IngestAgent, poison_reason
from breadcrumb.streams.freshness import bucket_counter
from breadcrumb.streams.state import DictStateStore
from breadcrumb.streams.tracking import ConsumedThrough, count_message, is_direct
from breadcrumb.topics.records import DeadLetter, Observation, split_thread_key

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Message:
    """One consumed Kafka message: raw key and value and where it sits."""

    key: bytes | None
    value: bytes | None
    position: str  # topic/partition/offset (also its dead letter's key)
    direct: bool = False  # published straight to Kafka (header breadcrumb-direct)
    accepted: float | None = None  # the message's Kafka timestamp, epoch s (freshness)


@dataclass(frozen=True, slots=True)
class Decoded:
    key: str
    text: str
    entry: Any
    poison: str | None
    position: str


def decode(message: Message) -> Decoded:
    """The message's key, text, JSON value and why it is poison (None: it is not)."""
    key = message.key.decode("utf-8", "replace") if message.key else ""
    value = message.value
    if value is None:
        return Decoded(key, "", None, "tombstone (a message without a value)", message.position)
    text = value.decode("utf-8", "replace")
    try:
        entry = orjson.loads(value)
    except orjson.JSONDecodeError:
        return Decoded(key, text, None, "value is not JSON", message.position)
    return Decoded(key, text, entry, poison_reason(key, entry), message.position)


@dataclass
class BatchResult:
    outcomes: list[str] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    letters: list[bytes] = field(default_factory=list)


class _Tally:
    """Counter increments collected during a batch (the outcomes and each partition's
    consumed-through mark), written with one statement at its end."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def incr(self, name: str, n: int = 1) -> None:
        self.counts[name] += n

    def flush(self, store: Any) -> None:
        store.incr_many(self.counts)


class _PositionedLetters:
    """Dead letters of a batch, each keyed by the position of the message being handled
    (``#n`` for a message's n-th), kept for the dead-letter topic."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.position = ""
        self.captured: list[bytes] = []
        self._per_position: Counter[str] = Counter()

    def put_dead_letter(self, letter: DeadLetter) -> None:
        n = self._per_position[self.position]
        self._per_position[self.position] += 1
        self.inner.put_dead_letter(letter, key=self.position if n == 0 else
                                   f"{self.position}#{n}")
        self.captured.append(orjson.dumps({**letter.to_dict(), "position": self.position}))

    def count_dead_letters(self) -> int:
        return int(self.inner.count_dead_letters())

    def list_dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        return list(self.inner.list_dead_letters(limit))


class BatchIngest:
    """Applies a batch of messages through an :class:`IngestAgent`'s parts and outputs."""

    def __init__(self, agent: IngestAgent) -> None:
        self.agent = agent
        self.batches = 0  # batches applied whole
        self.fallbacks = 0  # batches redone one message at a time

    async def handle_batch(self, messages: Sequence[Message]) -> list[str]:
        """Apply ``messages`` (in order) or dead-letter the poison among them; returns each
        one's outcome. Raises only when cancelled (then nothing may be acknowledged)."""
        if not messages:
            return []
        agent = self.agent
        decoded = [decode(m) for m in messages]
        keys = sorted({d.key for d in decoded if d.key})
        try:
            with ExitStack() as busy:
                for key in keys:
                    busy.enter_context(agent.idle.handling(key))
                result: BatchResult = await agent._run(self._apply, decoded, messages, keys)
                await agent._retrying("publish", lambda: agent.publish(result.observations,
                                                                       result.letters))
                await agent._retrying("publish", agent.publish_lifecycle)
        except Exception as exc:  # nothing committed: one at a time, under the policy
            self.fallbacks += 1
            log.warning("batch of %s messages from %s failed (%r); one at a time",
                        len(messages), messages[0].position, exc)
            return [await agent.handle(m.key, m.value, m.position, m.direct) for m in messages]
        self.batches += 1
        for d in decoded:
            if d.poison is None:
                agent.idle.touch(d.key, d.entry)
        return result.outcomes

    def _apply(self, decoded: Sequence[Decoded], messages: Sequence[Message],
               keys: Sequence[str]) -> BatchResult:
        """In the executor: the whole batch in one transaction. As for one message, each
        thread's state is read from SQL inside it (the last committed one, whatever crashed
        since) and counters are moved once per Kafka position (a redelivery only counts as
        ``redeliveries``)."""
        parts = self.agent.parts
        store = parts.store
        local = DictStateStore()
        mirror = DictStateStore()  # SQL copy of the states: written once per thread
        letters = _PositionedLetters(store)
        raw = BatchedRawEvents(store)  # event lookups and inserts in a few statements
        service = parts.service_for(local, letters, mirror=mirror, raw=raw)
        tally = _Tally()
        out = BatchResult()
        fresh: list[tuple[float, str, bool]] = []  # (accepted, outcome, closed a range)
        users = {split_thread_key(k)[0] for k in keys}
        with store.serialized(users), store.transaction():  # users: see SqlStore.serialized
            raw.prefetch((d.entry["user_id"], d.entry["event_id"]) for d in decoded
                         if d.poison is None and isinstance(d.entry, dict)
                         and isinstance(d.entry.get("user_id"), str)
                         and isinstance(d.entry.get("event_id"), str))
            for key, committed in store.get_states(keys).items():
                local.put_state(key, committed)
            seen = ConsumedThrough(store, writes=tally)
            with service.batched():
                for d, m in zip(decoded, messages, strict=True):
                    letters.position = d.position
                    if d.poison is not None:
                        result = service.reject(f"{d.poison} (at {d.position})", None, d.text,
                                                d.entry if isinstance(d.entry, dict) else None)
                    else:
                        result = service.handle(d.entry, d.text)
                    first = seen.first(d.position)
                    count_message(tally, result.outcome, 0, first, m.direct)
                    out.outcomes.append(result.outcome)
                    out.observations.extend(result.observations)
                    if first and m.accepted is not None:
                        fresh.append((m.accepted, result.outcome, bool(result.observations)))
            raw.flush()
            store.put_states(sorted(mirror.data.items()))
            count_freshness(tally, fresh, time.time())
            tally.flush(store)
        out.letters = letters.captured
        return out


def count_freshness(tally: Any, fresh: Sequence[tuple[float, str, bool]], now: float) -> None:
    """Freshness (issue 14) of a batch's first-consumed messages, into its counters: an
    event is recallable from its batch's commit (accepted = its Kafka timestamp, set when
    the gateway produced it); a message whose handling closed a range also counts as
    accepted → memory (memory and chunk rows committed, vectors written or acked on the
    vectors topic; a ``VectorSink``'s lag is not in it). ``now``: the batch's last
    statement before its commit."""
    for accepted, outcome, closed in fresh:
        if outcome == "processed":
            tally.incr(bucket_counter("recallable", now - accepted))
        if closed and outcome in ("processed", "flushed"):
            tally.incr(bucket_counter("memory", now - accepted))


async def consume_batches(stream: Any, batch: BatchIngest, parts: Any, settings: Any) -> None:
    """The Faust agent body in batch mode: ``noack_take`` buffers up to
    ``derive_batch_entries`` messages or ``derive_batch_max_ms`` of waiting; each message
    is acknowledged only after its batch was committed (or it was dead-lettered)."""
    size, within = settings.derive_batch_entries, settings.derive_batch_max_ms / 1000.0
    async for taken in stream.noack_take(size, within=within):
        for start in range(0, len(taken), size):  # the take can overfill (test context)
            events = taken[start:start + size]
            await batch.handle_batch([
                Message(e.key, e.value, kafka_position(e.message.topic, e.message.partition,
                                                       e.message.offset),
                        is_direct(e.message.headers), e.message.timestamp) for e in events])
            for event in events:
                await stream.ack(event)
                parts.positions[event.message.partition] = event.message.offset

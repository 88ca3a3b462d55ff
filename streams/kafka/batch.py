"""Cluster mode, micro-batched: many Kafka messages applied as ONE batch by the ingest agent.

The Faust app takes up to ``derive_batch_entries`` messages or ``derive_batch_max_ms`` of
waiting (``stream.noack_take``) and hands them to :class:`BatchIngest`, which applies them
in arrival order (so each thread — one key, one partition — keeps its order) with

* one SQL transaction: the raw events (looked up with one statement and inserted with
  one ``executemany``, ``stores.sql.raw_batch``), the thread states (read from SQL inside the
  transaction with one statement and written with one, not once per event), the counters
  (one statement for all, each message counted once by its Kafka position), the memories
  and chunks;
* one embedding call for the texts of every range closed in the batch, across threads,
  and one vector upsert (``IngestService.batched``, as the embedded runner does);
* the output topics and the acknowledgements only after the commit.

The batch is ONE unit of work of the ingest core (``streams.ingest_core``), the same the
agent applies to a single message. When it fails, nothing of it is committed and its
messages are handed one at a time to :meth:`IngestAgent.handle_item`, i.e. to the one
failure policy: a poison message is dead-lettered with its position and the others are
applied. Writes are idempotent (event
ids, memory ids, vector ids, dead letters keyed by position), so a crash between the
commit and the acknowledgement only redelivers messages that then change nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from functools import partial
from typing import Any

from breadcrumb.streams.failure_policy import describe, kafka_position
from breadcrumb.streams.kafka.agent import IngestAgent
from breadcrumb.streams.kafka.messages import Message, decode
from breadcrumb.streams.tracking import count_freshness, is_direct  # noqa: F401 (re-export)

log = logging.getLogger(__name__)
__all__ = ["BatchIngest", "Message", "consume_batches", "count_freshness"]


class BatchIngest:
    """Applies a batch of messages as one unit of work of an :class:`IngestAgent`."""

    def __init__(self, agent: IngestAgent) -> None:
        self.agent = agent
        self.batches = 0  # batches applied whole
        self.fallbacks = 0  # batches redone one message at a time

    async def handle_batch(self, messages: Sequence[Message],
                           lag: Callable[[], int | None] | None = None) -> list[str]:
        """Apply ``messages`` (in order) or dead-letter the poison among them; returns each
        one's outcome. Raises only when cancelled (then nothing may be acknowledged).
        Logs one line per batch: its size, time and the consumer's lag after it (``lag``)."""
        if not messages:
            return []
        started = time.perf_counter()
        outcomes = await self._apply(messages)
        seconds = time.perf_counter() - started
        behind = lag() if lag is not None else None
        log.info("batch of %s messages from %s: %.0f ms, %s%s", len(messages),
                 messages[0].position, seconds * 1000, _summary(outcomes),
                 "" if behind is None else f", lag {behind}")
        return outcomes

    async def _apply(self, messages: Sequence[Message]) -> list[str]:
        agent = self.agent
        items = [decode(m) for m in messages]
        try:
            with ExitStack() as busy:
                for key in sorted({i.key for i in items if i.key}):
                    busy.enter_context(agent.idle.handling(key))
                result = await agent.run_blocking(agent.unit().apply, items)
                await agent.publish_unit(result)
        except Exception as exc:  # nothing committed: one at a time, under the policy
            self.fallbacks += 1
            log.warning("batch of %s messages from %s failed (%s); one at a time",
                        len(messages), messages[0].position, describe(exc))
            return [await agent.handle_item(item) for item in items]
        self.batches += 1
        for item in items:
            if item.poison is None:
                agent.idle.touch(item.key, item.entry)
        return result.outcomes


def _summary(outcomes: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
    return " ".join(f"{name} {n}" for name, n in sorted(counts.items()))


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
                        is_direct(e.message.headers), e.message.timestamp) for e in events],
                lag=partial(_lag, stream, events))
            for event in events:
                await stream.ack(event)
                parts.positions[event.message.partition] = event.message.offset


def _lag(stream: Any, events: Sequence[Any]) -> int | None:
    """Messages behind the batch's last ones in their partitions (the consumer's
    highwater), None when Faust cannot say."""
    last: dict[Any, int] = {}
    for event in events:
        last[event.message.tp] = max(last.get(event.message.tp, -1), event.message.offset)
    try:
        consumer = stream.app.consumer
        marks = [consumer.highwater(tp) for tp in last]
    except Exception:  # a consumer without highwater (test context): no lag in the line
        return None
    behind = 0
    for mark, offset in zip(marks, last.values(), strict=True):
        if not isinstance(mark, int):
            return None
        behind += max(0, mark - offset - 1)
    return behind

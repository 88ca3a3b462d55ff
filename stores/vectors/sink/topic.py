"""Issue 14 (scale-out without a Qdrant server): vectors carried on a compacted topic and
written by ONE sink, the pattern of Kafka Connect's Qdrant sink.

Workers of one consumer group must not keep vectors apart (qdrant-client local mode is one
process per folder: two workers would split them and recall through one would miss the
other's memories). With ``VECTOR_STORE=topic`` a worker's index is a
:class:`TopicVectorIndex`: each point write becomes a record of the ``vectors`` topic (one
partition, compacted, keyed ``<prefix>/m/<memory id>``, ``<prefix>/c/<chunk id>``,
``<prefix>/p/<memory id>`` for a payload change; the generation's collection prefix rides
in each record, so a replay's generation fills its own collections, not main's), sent and
acknowledged by Kafka *before* the batch's SQL commit — the same order as a vector
upsert, so a crash in between is repaired by the redelivery. A :class:`VectorSink` (one
per deployment, in the process that owns the vector store, e.g. the query API) consumes
the topic in order and replays each record on a real index; it commits its offsets after
the writes, and every write is an idempotent upsert by id, so the store converges to the
same points whichever worker derived them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from breadcrumb.stores.ports import DeferredFlush, SparseVector
from breadcrumb.topics.kafka_security import started
from breadcrumb.topics.loops import run_on
from breadcrumb.topics.records import Chunk, Observation

log = logging.getLogger(__name__)
Records = list[tuple[bytes, bytes]]


def _sparse(vector: SparseVector) -> dict[str, list[Any]]:
    return {"indices": list(vector.indices), "values": list(vector.values)}


def _key(kind: str, point: str, prefix: str | None) -> bytes:
    """The compaction key: a generation's records (same ids as main's after a replay) must
    not replace main's, so the collection prefix is part of it when known."""
    return (f"{kind}/{point}" if prefix is None else f"{prefix}/{kind}/{point}").encode()


def _body(record: dict[str, Any], prefix: str | None) -> bytes:
    return orjson.dumps(record if prefix is None else {**record, "prefix": prefix})


def memory_records(observations: Sequence[Observation], dense: Sequence[Sequence[float]],
                   sparse: Sequence[SparseVector], prefix: str | None = None) -> Records:
    return [(_key("m", o.id, prefix), _body({
        "op": "memory", "observation": o.to_dict(), "dense": list(d), "sparse": _sparse(s)},
        prefix)) for o, d, s in zip(observations, dense, sparse, strict=True)]


def chunk_records(chunks: Sequence[Chunk], dense: Sequence[Sequence[float] | None],
                  sparse: Sequence[SparseVector], prefix: str | None = None) -> Records:
    return [(_key("c", c.id, prefix), _body({
        "op": "chunk", "chunk": c.to_dict(), "dense": None if d is None else list(d),
        "sparse": _sparse(s)}, prefix))
        for c, d, s in zip(chunks, dense, sparse, strict=True)]


class TopicVectorIndex:
    """The write side of a VectorIndex for a worker: points go to the ``vectors`` topic.

    ``send`` delivers records and returns once Kafka acknowledged them (it raises on a
    failure, which the failure policy treats like a vector-store error)."""

    def __init__(self, send: Callable[[Records], None], close: Callable[[], None] | None = None,
                 prefix: str | None = None) -> None:
        self._send = send
        self._close = close
        self.prefix = prefix  # the generation's collection prefix, carried by each record
        self.sent = 0

    def ensure(self) -> None:
        return None  # the topic is declared with the others (topics.names.topic_specs)

    def close(self) -> None:
        if self._close is not None:
            self._close()

    def _deliver(self, records: Records) -> None:
        if records:
            self._send(records)
            self.sent += len(records)

    def upsert_memories(self, observations: Sequence[Observation],
                        dense: Sequence[Sequence[float]], sparse: Sequence[SparseVector]) -> None:
        self._deliver(memory_records(observations, dense, sparse, self.prefix))

    def upsert_chunks(self, chunks: Sequence[Chunk], dense: Sequence[Sequence[float] | None],
                      sparse: Sequence[SparseVector]) -> None:
        self._deliver(chunk_records(chunks, dense, sparse, self.prefix))

    def set_memory_payload(self, memory_id: str, values: dict[str, Any]) -> None:
        self._deliver([(_key("p", memory_id, self.prefix), _body(
            {"op": "payload", "memory_id": memory_id, "values": values}, self.prefix))])

    def count(self, exact: bool = True) -> dict[str, int]:
        raise NotImplementedError("a worker's topic index is write-only; the sink's is read")


class KafkaRecordSender:
    """``send(records)`` for a worker thread: an aiokafka producer (acks=all, idempotent) on
    its own event loop thread, so the executor thread can wait for the acknowledgement."""

    def __init__(self, bootstrap: str, topic: str, timeout: float = 60.0,
                 **kafka: Any) -> None:
        self.topic = topic
        self.timeout = timeout
        self._kafka = {"bootstrap_servers": bootstrap, **kafka}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._producer: Any = None
        self._lock = threading.Lock()

    def _start(self) -> asyncio.AbstractEventLoop:
        from aiokafka import AIOKafkaProducer

        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="breadcrumb-vectors",
                                 daemon=True).start()

                async def start() -> Any:
                    return await started(AIOKafkaProducer(acks="all", enable_idempotence=True,
                                                          **self._kafka))
                self._producer = run_on(loop, start(), self.timeout)
                self._loop = loop
            return self._loop

    def __call__(self, records: Records) -> None:
        loop = self._start()

        async def send() -> None:
            futures = [await self._producer.send(self.topic, value, key=key)
                       for key, value in records]
            await asyncio.gather(*futures)
        run_on(loop, send(), self.timeout)

    def close(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None:
            run_on(loop, self._producer.stop(), self.timeout)
            loop.call_soon_threadsafe(loop.stop)


def apply_records(index: Any, values: Sequence[bytes]) -> int:
    """Replay topic records on a real index in order (runs of memories / chunks as one
    upsert each); returns how many records were applied. A record of another collection
    prefix (a generation being built by a replay) goes to ``index.sibling(prefix)``: the
    same store, that generation's collections, never main's."""
    run: list[dict[str, Any]] = []
    targets: dict[str, Any] = {}
    target = index

    def route(prefix: str | None) -> Any:
        if prefix is None or prefix == getattr(index, "prefix", None):
            return index
        if prefix not in targets:
            targets[prefix] = index.sibling(prefix)
            targets[prefix].ensure()
        return targets[prefix]

    def flush() -> None:
        if not run:
            return
        dense = [r["dense"] for r in run]
        sparse = [SparseVector(tuple(r["sparse"]["indices"]), tuple(r["sparse"]["values"]))
                  for r in run]
        if run[0]["op"] == "memory":
            target.upsert_memories([Observation.from_dict(r["observation"]) for r in run],
                                   dense, sparse)
        else:
            target.upsert_chunks([Chunk.from_dict(r["chunk"]) for r in run], dense, sparse)
        run.clear()

    for value in values:
        record = orjson.loads(value)
        where = route(record.get("prefix"))
        if where is not target:
            flush()
            target = where
        if record["op"] == "payload":
            flush()
            try:
                target.set_memory_payload(record["memory_id"], record["values"])
            except Exception as exc:  # a memory since removed: nothing to update
                log.warning("vector sink: payload of %s skipped: %s", record["memory_id"], exc)
            continue
        if run and run[0]["op"] != record["op"]:
            flush()
        run.append(record)
    flush()
    return len(values)


class VectorSink:
    """The one consumer of the ``vectors`` topic: applies it to ``index`` and commits."""

    def __init__(self, index: Any, bootstrap: str, topic: str, group: str,
                 **kafka: Any) -> None:
        self.index = index
        self.topic = topic
        self._kafka = {"bootstrap_servers": bootstrap, "group_id": group, **kafka}
        self.applied = 0

    async def run(self, stop: asyncio.Event, poll_ms: int = 500) -> None:
        """Apply records until ``stop`` is set (offsets committed after each write)."""
        from aiokafka import AIOKafkaConsumer

        consumer = await started(AIOKafkaConsumer(
            self.topic, enable_auto_commit=False, auto_offset_reset="earliest", **self._kafka))
        loop = asyncio.get_running_loop()
        try:
            while not stop.is_set():
                batch = await consumer.getmany(timeout_ms=poll_ms, max_records=2000)
                values = [r.value for records in batch.values() for r in records
                          if r.value is not None]
                if values:
                    await loop.run_in_executor(None, apply_records, self.index, values)
                    self.applied += len(values)
                if batch:
                    await consumer.commit()
                elif isinstance(self.index, DeferredFlush):  # idle: persist what is due
                    await loop.run_in_executor(None, self.index.flush_due)
        finally:
            await consumer.stop()


class SinkThread:
    """Runs a :class:`VectorSink` on its own event loop thread (the query API's starter)."""

    def __init__(self, sink: VectorSink) -> None:
        self.sink = sink
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        ready = threading.Event()

        def main() -> None:
            async def run() -> None:
                self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
                ready.set()
                while not self._stop.is_set():
                    try:
                        await self.sink.run(self._stop)
                    except Exception:  # Kafka away: log, wait, resume from the commit
                        log.exception("vector sink failed; restarting in 5 s")
                        await asyncio.sleep(5)
            asyncio.run(run())
        self._thread = threading.Thread(target=main, name="breadcrumb-vector-sink",
                                        daemon=True)
        self._thread.start()
        ready.wait(10)

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout)

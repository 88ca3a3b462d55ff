"""Cluster-mode replay: rebuild every derived store from ``agent-events`` into a new generation.

The new generation gets a Faust app of its own (``{worker_id}__G``: a new consumer group
that starts at the earliest offset, and a thread-state table of its own) writing into its
own database and Qdrant collections. While it is behind, it publishes nothing (the live
topics already carry what it recomputes). Progress is its processed offsets against the
topic's end offsets. When every partition has caught up, manual and sweeper status
changes are carried over from the compacted ``memory-status`` topic (they are not in the
event log), the alias is switched, and the app becomes the new generation's worker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from breadcrumb.stores.clock import utc_now_iso
from breadcrumb.streams.embedded.replay import Progress, abandoned_builds
from breadcrumb.topics.kafka_security import aiokafka_kwargs
from breadcrumb.topics.names import AGENT_EVENTS, MEMORY_STATUS

log = logging.getLogger(__name__)
POLL_SECONDS = 0.5
HEARTBEAT_SECONDS = 5.0  # a building generation's heartbeat_at (see replay_stale_seconds)


def fail_abandoned(catalog: Any, stale_seconds: float) -> list[str]:
    """Mark generations whose replay was killed (``building``, heartbeat older than
    ``stale_seconds``) failed, so they show as such and can be removed."""
    names = abandoned_builds(catalog.describe()["generations"], datetime.now(UTC),
                             stale_seconds)
    for name in names:
        log.warning("generation %s: its replay stopped (no heartbeat); marked failed", name)
        catalog.mark(name, "failed", error="replay stopped before the switch (no heartbeat)")
    return names


async def build_generation(manager: Any, name: str,
                           on_progress: Callable[[Progress], None] | None,
                           build_worker_parts: Callable[..., Any]) -> tuple[
                               Progress, Any, Any]:
    """Create, fill and switch to generation ``name``; returns (progress, app, parts).

    ``build_worker_parts(settings, embedder, index=...)`` comes from the composition root
    (infra), which streams/ does not import."""
    from breadcrumb.streams.kafka.app import create_app

    loop = asyncio.get_running_loop()
    settings, catalog = manager.settings, manager.catalog
    progress = Progress(name, started=time.monotonic())
    await loop.run_in_executor(None, fail_abandoned, catalog, settings.replay_stale_seconds)
    info = {"embedder": manager.embedder.name, "dim": manager.embedder.dim,
            "llm_model": settings.llm_model, "source": settings.topic(AGENT_EVENTS)}
    gen = await loop.run_in_executor(None, catalog.create, name, info, utc_now_iso())

    def parts_for() -> Any:
        return build_worker_parts(gen, manager.embedder, index=manager.index_for(gen))

    parts = await loop.run_in_executor(None, parts_for)
    parts.generation, parts.catalog, parts.publishing = name, catalog, False
    app = create_app(gen, parts, web=False)
    await app.start()
    log.info("replay into generation %s: consumer group %s from the earliest offset",
             name, gen.worker_id)
    try:
        async def heartbeat() -> None:
            at = utc_now_iso()
            await loop.run_in_executor(None, lambda: catalog.mark(name, "building",
                                                                  heartbeat_at=at))

        await _catch_up(app, parts, settings, progress, on_progress, heartbeat)
        carried = await _carry_over(settings, parts)
        await loop.run_in_executor(None, catalog.switch, name)
        parts.publishing = True
        await loop.run_in_executor(None, lambda: catalog.mark(
            name, "current", events=progress.applied, carried_changes=carried))
    except BaseException as exc:
        progress.state, progress.error = "failed", repr(exc)
        await app.stop()
        parts.close()
        error = repr(exc)
        await loop.run_in_executor(None, lambda: catalog.mark(name, "failed", error=error))
        raise
    progress.state = "done"
    if on_progress is not None:
        on_progress(progress)
    return progress, app, parts


async def _catch_up(app: Any, parts: Any, settings: Any, progress: Progress,
                    on_progress: Callable[[Progress], None] | None,
                    heartbeat: Callable[[], Awaitable[None]] | None = None) -> None:
    """Wait until the new generation has processed every partition to its end offset
    (checked twice in a row, so a message in flight is not missed)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    topic = settings.topic(AGENT_EVENTS)
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.kafka_bootstrap,
                                enable_auto_commit=False, **aiokafka_kwargs(settings))
    await consumer.start()
    try:
        ids = await partitions_of(settings, topic)
        tps = [TopicPartition(topic, p) for p in sorted(ids)]
        if not tps:
            raise RuntimeError(f"topic {topic} has no partitions (is it declared?)")
        begin = await consumer.beginning_offsets(tps)
        streak, beat = 0, 0.0
        while streak < 2:
            if heartbeat is not None and time.monotonic() - beat >= HEARTBEAT_SECONDS:
                beat = time.monotonic()
                try:
                    await heartbeat()
                except Exception as exc:  # the control database is down: try next beat
                    log.warning("replay heartbeat failed: %s", exc)
            crashed = getattr(app, "crash_reason", None) or getattr(app, "_crash_reason", None)
            if crashed is not None:
                raise RuntimeError(f"replay worker crashed: {crashed!r}")
            end = await consumer.end_offsets(tps)
            done = {tp: min(parts.positions.get(tp.partition, begin[tp] - 1) + 1, end[tp])
                    for tp in tps}
            progress.total = sum(end[tp] - begin[tp] for tp in tps)
            progress.applied = sum(max(0, done[tp] - begin[tp]) for tp in tps)
            if on_progress is not None:
                on_progress(progress)
            streak = streak + 1 if all(done[tp] >= end[tp] for tp in tps) else 0
            await asyncio.sleep(POLL_SECONDS)
    finally:
        await consumer.stop()


async def partitions_of(settings: Any, topic: str) -> list[int]:
    """The partition ids of a topic (empty when it does not exist)."""
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap,
                                **aiokafka_kwargs(settings))
    await admin.start()
    try:
        described = await admin.describe_topics([topic])
    finally:
        await admin.close()
    return sorted(int(p["partition"]) for d in described if d.get("error_code", 0) == 0
                  for p in d["partitions"])


async def read_compacted(settings: Any, topic: str) -> list[tuple[str, Any]]:
    """Every (key, value) of a topic from the earliest to the current end offset."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=settings.kafka_bootstrap,
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                **aiokafka_kwargs(settings))
    await consumer.start()
    try:
        ids = await partitions_of(settings, topic)
        tps = [TopicPartition(topic, p) for p in sorted(ids)]
        if not tps:
            return []
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        end = await consumer.end_offsets(tps)
        out: list[tuple[str, Any]] = []
        remaining = {tp for tp in tps if end[tp] > 0}
        while remaining:
            batch = await consumer.getmany(*remaining, timeout_ms=1000)
            for records in batch.values():
                for rec in records:
                    key = rec.key.decode() if rec.key else ""
                    out.append((key, None if rec.value is None else orjson.loads(rec.value)))
            remaining = {tp for tp in remaining if await consumer.position(tp) < end[tp]}
        return out
    finally:
        await consumer.stop()


async def _carry_over(settings: Any, parts: Any) -> int:
    """Manual and sweeper changes (not derivable from the event log) into the new
    generation; memories it does not have are skipped. Returns how many applied."""
    if parts.lifecycle is None:
        return 0
    changes = await read_compacted(settings, settings.topic(MEMORY_STATUS))
    values = [(key, value) for key, value in changes
              if value is None or value.get("actor") != "pipeline"]
    loop = asyncio.get_running_loop()
    applied: int = await loop.run_in_executor(None, parts.lifecycle.replay, values)
    parts.lifecycle.publisher.drain()
    return applied

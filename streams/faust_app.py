"""Cluster mode: the Faust app. Decode → the shared ``IngestService`` → tables and topics.

Per-thread segment state lives in a Faust table (changelog-backed, keyed like the
source topic so partitions line up). The blocking store and embedding work runs in a
one-thread executor so the agent keeps its order and the event loop keeps heartbeating;
the table itself is only read and written inside the stream iteration.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import faust
import orjson

from breadcrumb.infra.settings import Settings
from breadcrumb.streams.service import HandleResult, IngestService
from breadcrumb.streams.state import CapturingDeadLetters, DictStateStore
from breadcrumb.topics.names import AGENT_EVENTS, DEAD_LETTERS, MEMORY_STATUS, OBSERVATIONS
from breadcrumb.topics.records import (
    FlushMarker,
    MemoryStatusChange,
    Observation,
    split_thread_key,
    thread_key,
)

log = logging.getLogger(__name__)
_UNDECODABLE = object()


def create_app(settings: Settings, parts: Any, web: bool = True) -> faust.App:
    """Build the Faust app around the cluster ports (``parts`` from infra.cluster).

    Only the worker of the *current* generation publishes (observations, memory-status,
    dead letters, idle flush markers) and sweeps; a generation being built by a replay
    only fills its own stores (``parts.publishing`` follows the alias).
    """
    app = faust.App(
        settings.worker_id,
        broker=f"kafka://{settings.kafka_bootstrap}",
        store="memory://",
        topic_partitions=settings.kafka_partitions,
        topic_replication_factor=settings.kafka_replication,
        producer_acks=-1,
        consumer_auto_offset_reset="earliest",
        web_port=settings.worker_web_port,
        web_enabled=web,
        web_host="127.0.0.1",
        topic_allow_declare=True,
        datadir=str(settings.data_dir / "faust"),  # Faust's own files, not the cwd
        key_serializer="raw",  # table keys/values are bytes we encode ourselves
        value_serializer="raw",
    )
    events = _raw_topic(app, settings.topic(AGENT_EVENTS), settings.kafka_partitions)
    dlq = _raw_topic(app, settings.topic(DEAD_LETTERS))
    observations = _raw_topic(app, settings.topic(OBSERVATIONS))
    status = _raw_topic(app, settings.topic(MEMORY_STATUS))
    states = app.Table("thread-state", default=None, partitions=settings.kafka_partitions,
                       key_type=str, value_type=bytes)
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="breadcrumb-ingest")
    last_seen: dict[str, float] = {}
    busy: set[str] = set()  # the key whose message is being handled right now

    def handle(entry: Any, text: str, key: str, state: bytes | None) -> tuple[
            HandleResult, DictStateStore, CapturingDeadLetters]:
        local = DictStateStore({key: orjson.loads(state)} if state else {})
        letters = CapturingDeadLetters(parts.store)
        service: IngestService = parts.service_for(local, letters)
        if entry is _UNDECODABLE:
            service.reject("value is not JSON", None, text)
            return HandleResult("rejected"), local, letters
        with parts.store.transaction():  # one commit per message, not one per statement
            result = service.handle(entry, text)
            parts.store.incr("events_processed" if result.outcome != "flushed" else "flushes")
        return result, local, letters

    @app.agent(events)
    async def ingest(stream: Any) -> Any:
        loop = asyncio.get_running_loop()
        async for event in stream.events():
            key = event.key.decode("utf-8", "replace") if event.key else ""
            text = event.value.decode("utf-8", "replace")
            try:
                entry: Any = orjson.loads(event.value)
            except orjson.JSONDecodeError:
                entry = _UNDECODABLE
            key = _state_key(entry, key)
            busy.add(key)  # a thread being processed is not idle (slow embeds take seconds)
            try:
                result, local, letters = await loop.run_in_executor(
                    executor, handle, entry, text, key, states.get(key))
                if local.changed(key):
                    states[key] = orjson.dumps(local.get_state(key))
                await _publish(result.observations, letters.captured)
                await _publish_lifecycle()  # issue 5: after "created", so compaction keeps ours
                _touch(key, entry)
            finally:
                busy.discard(key)
            parts.positions[event.message.partition] = event.message.offset

    async def _publish_lifecycle() -> None:
        if parts.lifecycle is None:
            return
        drained = parts.lifecycle.publisher.drain()
        if not parts.publishing:
            return  # a generation being built: the live topics already hold these
        for memory_id, value in drained:
            data = None if value is None else orjson.dumps(value)
            await status.send(key=memory_id.encode(), value=data)

    @app.timer(interval=settings.lifecycle_sweep_seconds)
    async def lifecycle_sweep() -> None:
        """Issue 5: the tier/archive sweeper; its changes go to memory-status."""
        if parts.lifecycle is None or not parts.publishing:
            return
        await asyncio.get_running_loop().run_in_executor(executor, parts.lifecycle.sweep)
        await _publish_lifecycle()

    async def _publish(observed: list[Observation], letters: list[bytes]) -> None:
        if not parts.publishing:
            return
        for obs in observed:
            await observations.send(key=obs.id.encode(), value=orjson.dumps(obs.to_dict()))
            change = MemoryStatusChange(obs.id, obs.user_id, obs.status, obs.tier,
                                        obs.created_at, "pipeline", "created")
            await status.send(key=obs.id.encode(), value=orjson.dumps(change.to_dict()))
        for letter in letters:
            await dlq.send(value=letter)

    def _touch(key: str, entry: Any) -> None:
        if isinstance(entry, dict) and (FlushMarker.is_flush(entry)
                                        or entry.get("kind") == "session_end"):
            last_seen.pop(key, None)
        elif key:
            last_seen[key] = time.monotonic()

    @app.timer(interval=max(1.0, min(settings.idle_flush_seconds / 4, 30.0)))
    async def flush_idle() -> None:
        """Idle threads get a keyed flush message sent into the stream (tables are
        only written inside stream iteration)."""
        if not parts.publishing:
            return  # a replayed generation gets the live worker's flush markers from the log
        now = time.monotonic()
        for key, value in list(states.items()):
            if key in busy:
                continue
            if value and orjson.loads(value).get("pending") and key not in last_seen:
                last_seen[key] = now  # open window found after a restart: start its clock
        for key, seen in list(last_seen.items()):
            if now - seen >= settings.idle_flush_seconds and key not in busy:
                user_id, thread_id = split_thread_key(key)
                marker = FlushMarker(user_id, thread_id, parts.clock(), "idle")
                await events.send(key=key.encode(), value=orjson.dumps(marker.to_dict()))
                last_seen.pop(key, None)

    @app.timer(interval=settings.generation_poll_seconds)
    async def follow_alias() -> None:
        """Publish only while this worker's generation is the current one."""
        if parts.catalog is None:
            return
        current = await asyncio.get_running_loop().run_in_executor(None, parts.catalog.current)
        if (current == parts.generation) != parts.publishing:
            log.warning("generation %s is %s current (alias: %s)", parts.generation,
                        "now" if current == parts.generation else "no longer", current)
            parts.publishing = current == parts.generation

    app.breadcrumb_agent = ingest  # type: ignore[attr-defined]
    return app


def _state_key(entry: Any, message_key: str) -> str:
    """The thread's state key from the entry itself; a message published before keys were
    escaped (issue 12) carries the old ``{user_id}/{thread_id}`` key."""
    if isinstance(entry, dict) and isinstance(entry.get("user_id"), str) \
            and isinstance(entry.get("thread_id"), str):
        return thread_key(entry["user_id"], entry["thread_id"])
    return message_key


def _raw_topic(app: faust.App, name: str, partitions: int | None = None) -> Any:
    """A topic of raw bytes keys and values (we decode ourselves, so bad input is data)."""
    return app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw",
                     value_serializer="raw", partitions=partitions)


def run_worker(settings: Settings, loglevel: str = "info", serve_api: bool = False) -> None:
    """``breadcrumb worker``: declare the topics, then run the Faust worker until stopped.

    With ``serve_api`` the HTTP query service runs in the worker's event loop too, sharing
    its vector index (qdrant-client local mode allows one process per folder).
    """
    from breadcrumb.infra.cluster import build_worker_parts, declare_topics
    from breadcrumb.stores.cluster_generations import ClusterCatalog, generation_settings

    asyncio.run(declare_topics(settings))
    catalog = ClusterCatalog(settings)
    name = catalog.current()  # the alias: which generation this worker fills
    gen = generation_settings(settings, name)
    log.info("worker fills generation %s (consumer group %s)", name, gen.worker_id)
    parts = build_worker_parts(gen)
    parts.generation, parts.catalog = name, catalog
    app = create_app(gen, parts)
    if serve_api:
        _attach_api(app, settings, parts)
    worker = faust.Worker(app, loglevel=loglevel)
    try:
        worker.execute_from_commandline()
    finally:
        parts.close()


def _attach_api(app: faust.App, settings: Settings, parts: Any) -> None:
    import uvicorn

    from breadcrumb.infra.bootstrap import observer_stats
    from breadcrumb.infra.cluster import build_cluster_runtime
    from breadcrumb.query_api.app import create_app as create_http_app

    runtime = build_cluster_runtime(settings, parts.embedder, index=parts.index)
    runtime.generation_manager.local_parts = parts  # a replay here quiets this worker
    base_stats = runtime.extra_stats  # this process runs the observer: report it too
    runtime.extra_stats = lambda: {**base_stats(), **observer_stats(parts.observer)}
    http = create_http_app(runtime, manage_lifecycle=False)
    class _InLoopServer(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:  # Faust owns the signals here
            yield

    from breadcrumb.query_api.telemetry import uvicorn_log_config

    server = _InLoopServer(uvicorn.Config(http, host=settings.host, port=settings.port,
                                          log_level="info", lifespan="off",
                                          log_config=uvicorn_log_config(settings),
                                          timeout_graceful_shutdown=5))

    @app.task
    async def serve_http() -> None:
        from breadcrumb.client import write_server_marker

        await asyncio.get_running_loop().run_in_executor(None, runtime.start)
        marker = write_server_marker(settings)  # CLI commands on this data dir find us
        try:
            await server.serve()
        finally:
            marker.unlink(missing_ok=True)
            await runtime.generation_manager.aclose()
            runtime.stop()

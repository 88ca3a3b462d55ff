"""Cluster mode: the Faust app. Messages of ``agent-events`` → :class:`IngestAgent`.

Per-thread segment state lives in the SQL store, in each message's transaction (see
``streams.kafka.agent``); the app has no Faust table. With a table, Faust's post-rebalance
recovery resumes the source partitions while its fetcher already runs, then seeks and
resumes flow control, which clears the stream queues: messages fetched in between are
dropped unprocessed, their offsets never acked, and the commit stops at the hole (a worker
"ready" that never drains). Without tables Faust seeks before it starts fetching.
The blocking store and embedding work runs in a one-thread executor so the agent keeps
its order and the event loop keeps heartbeating.

Acknowledgement is manual (``stream.noack()``): a message is acknowledged only after the
agent applied or dead-lettered it, so neither an error nor a shutdown in the middle of a
message moves the committed offset past it. The timers never stop the app: their
errors are logged, counted and retried on the next tick.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import faust

from breadcrumb.streams.failure_policy import FailurePolicy, kafka_position
from breadcrumb.streams.kafka import agent as fa
from breadcrumb.streams.kafka.batch import BatchIngest, consume_batches
from breadcrumb.streams.kafka.ownership import assigned_keys
from breadcrumb.streams.tracking import IdleTracker, is_direct
from breadcrumb.topics import names
from breadcrumb.topics.kafka_security import faust_credentials

log = logging.getLogger(__name__)


class TopicSink:
    """The agent's logical topics → this app's Faust topics."""

    def __init__(self, topics: dict[str, Any]) -> None:
        self.topics = topics

    async def send(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        await self.topics[topic].send(key=key, value=value)


def failure_policy(settings: Any) -> FailurePolicy:
    """The settings' ``failure_*`` values as a policy."""
    return FailurePolicy(max_attempts=settings.failure_max_attempts,
                         base_delay=settings.failure_backoff_seconds,
                         max_delay=settings.failure_backoff_max_seconds)


def create_app(settings: Any, parts: Any, web: bool = True,
               client_id: str | None = None) -> faust.App:
    """Build the Faust app around the cluster ports (``parts`` from infra.cluster).

    Only the worker of the *current* generation publishes (observations, memory-status,
    dead letters, idle flush markers) and sweeps; a generation being built by a replay
    only fills its own stores (``parts.publishing`` follows the alias).
    """
    extra: dict[str, Any] = {}
    if client_id:  # names the worker's vector folder: a restarted worker is known as itself
        extra["broker_client_id"] = client_id
    app = faust.App(
        settings.worker_id,
        **extra,
        broker=f"kafka://{settings.kafka_bootstrap}",
        broker_credentials=faust_credentials(settings),
        store="memory://",
        topic_partitions=settings.kafka_partitions,
        topic_replication_factor=settings.kafka_replication,
        producer_acks=-1,
        consumer_auto_offset_reset="earliest",
        broker_session_timeout=settings.kafka_session_timeout_seconds,
        broker_heartbeat_interval=settings.kafka_heartbeat_seconds,
        # loopback unless configured (Faust binds 0.0.0.0 by default: web_host only names
        # the advertised URL); the port is resolved by `breadcrumb worker` (6066 or free)
        web_port=settings.worker_web_port or 6066,
        web_enabled=web,
        web_bind=settings.worker_web_host,
        web_host=_advertised(settings.worker_web_host),
        topic_allow_declare=True,
        datadir=str(settings.data_dir / "faust"),  # Faust's own files, not the cwd
        key_serializer="raw",  # keys/values are bytes we encode ourselves
        value_serializer="raw",
    )
    events = _raw_topic(app, settings.topic(names.AGENT_EVENTS), settings.kafka_partitions)
    sink = TopicSink({
        fa.EVENTS: events,
        fa.DEAD_LETTERS: _raw_topic(app, settings.topic(names.DEAD_LETTERS)),
        fa.OBSERVATIONS: _raw_topic(app, settings.topic(names.OBSERVATIONS)),
        fa.STATUS: _raw_topic(app, settings.topic(names.MEMORY_STATUS)),
    })
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="breadcrumb-ingest")
    owns = assigned_keys(app, settings.topic(names.AGENT_EVENTS), settings.kafka_partitions)
    agent = fa.IngestAgent(parts, sink, IdleTracker(settings.idle_flush_seconds),
                           failure_policy(settings), executor, owns=owns)

    batch = BatchIngest(agent)

    @app.agent(events)
    async def ingest(stream: Any) -> Any:
        if settings.derive_batch_entries > 1:  # issue 14: micro-batches (streams.kafka.batch)
            await consume_batches(stream, batch, parts, settings)
            return
        manual = stream.noack()  # acknowledged below, once applied or dead-lettered
        async for event in manual.events():
            msg = event.message
            await agent.handle(event.key, event.value,
                               kafka_position(msg.topic, msg.partition, msg.offset),
                               is_direct(msg.headers))
            await manual.ack(event)
            parts.positions[msg.partition] = msg.offset

    @app.timer(interval=settings.lifecycle_sweep_seconds)
    async def lifecycle_sweep() -> None:
        """Issue 5: the tier/archive sweeper; its changes go to memory-status."""
        await agent.guarded("lifecycle_sweep", agent.sweep)

    @app.timer(interval=max(1.0, min(settings.idle_flush_seconds / 4, 30.0)))
    async def flush_idle() -> None:
        await agent.guarded("flush_idle", agent.flush_idle)

    @app.timer(interval=settings.generation_poll_seconds)
    async def follow_alias() -> None:
        await agent.guarded("follow_alias", agent.follow_alias)

    app.breadcrumb_agent = ingest  # type: ignore[attr-defined]
    app.breadcrumb_ingest = agent  # type: ignore[attr-defined]
    app.breadcrumb_batch = batch  # type: ignore[attr-defined]
    return app


def _advertised(bind: str) -> str:
    """The host in the worker's advertised web URL (a wildcard bind: this host's name)."""
    import socket

    return socket.gethostname() if bind in ("", "0.0.0.0", "::") else bind


def _raw_topic(app: faust.App, name: str, partitions: int | None = None) -> Any:
    """A topic of raw bytes keys and values (we decode ourselves, so bad input is data)."""
    return app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw",
                     value_serializer="raw", partitions=partitions)

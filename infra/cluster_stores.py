"""Cluster-mode stores from settings: MySQL/TiDB, Qdrant (a server or local mode; Qdrant Edge for
serve's vector sink without a server), S3, Kafka topics."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from breadcrumb.settings import Settings
from breadcrumb.stores.sql.mysql.store import MySqlStore, mysql_store

__all__ = ["build_cold_store", "build_qdrant_index", "build_sink_index", "build_sql_store",
           "build_vector_index", "declare_topics", "group_members", "mysql_store", "sink_group",
           "split_store_reason"]


log = logging.getLogger(__name__)

def build_sql_store(settings: Settings) -> MySqlStore:
    """:func:`mysql_store`, opened (its tables created if missing)."""
    store = mysql_store(settings)
    store.open()
    return store


def build_vector_index(settings: Settings, dim: int) -> Any:
    """qdrant-client against a server URL, or local mode under ``data_dir/qdrant``; with
    ``vector_store=topic`` a worker's write-only index on the ``vectors`` topic."""
    if settings.vector_store == "topic":
        from breadcrumb.stores.vectors.sink.topic import KafkaRecordSender, TopicVectorIndex
        from breadcrumb.topics.kafka_security import aiokafka_kwargs
        from breadcrumb.topics.names import VECTORS

        settings.data_dir.mkdir(parents=True, exist_ok=True)  # Faust's files go there
        sender = KafkaRecordSender(settings.kafka_bootstrap, settings.topic(VECTORS),
                                   **aiokafka_kwargs(settings))
        return TopicVectorIndex(sender, sender.close, prefix=settings.qdrant_collection_prefix)
    return build_qdrant_index(settings, dim)


def build_qdrant_index(settings: Settings, dim: int) -> Any:
    """qdrant-client against a server URL, or local mode under ``data_dir/qdrant``."""
    from qdrant_client import QdrantClient

    from breadcrumb.stores.vectors.server.index import QdrantServerIndex

    def factory() -> QdrantClient:
        if settings.qdrant_url:
            key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
            return QdrantClient(url=settings.qdrant_url, api_key=key)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        return QdrantClient(path=str(settings.data_dir / "qdrant"))

    index = QdrantServerIndex(factory, settings.qdrant_collection_prefix, dim)
    index.ensure()
    return index


def build_sink_index(settings: Settings, dim: int) -> Any:
    """The store ``serve``'s vector sink writes and its recall reads: the Qdrant server at
    ``QDRANT_URL``, else Qdrant Edge under ``data_dir/sink-vectors/<prefix>``
    (:mod:`stores.vectors.edge.collections`; qdrant-client local mode before)."""
    if settings.qdrant_url:
        return build_qdrant_index(settings, dim)
    from breadcrumb.stores.data_dir import StartupError, try_acquire
    from breadcrumb.stores.vectors.edge.collections import EdgeCollections

    root = sink_root(settings)
    if try_acquire(root) is None:  # held for the process's life (the kernel drops it)
        raise StartupError(
            f"the vector store {root} (Qdrant Edge: no BREADCRUMB_QDRANT_URL) is held by "
            "another process: give this serve its own BREADCRUMB_DATA_DIR, or set "
            "BREADCRUMB_QDRANT_URL (a Qdrant server)")
    index = EdgeCollections(root, settings.qdrant_collection_prefix, dim)
    index.ensure()
    return index


def sink_root(settings: Settings) -> Path:
    """Where ``serve`` keeps the sink's Qdrant Edge collections without a Qdrant server."""
    return settings.data_dir / "sink-vectors"


def sink_group(settings: Settings) -> str:
    """The vector sink's consumer group: with a local store it names the store
    (``store-id``), so a new or emptied store reads the ``vectors`` topic from its start."""
    group = f"{settings.worker_id}-vector-sink"
    if settings.qdrant_url:
        return group
    from breadcrumb.stores.vectors.edge.collections import store_id

    return f"{group}-{store_id(sink_root(settings))}"


def split_store_reason(settings: Settings, members: int | None) -> str | None:
    """Why a worker joining a group of ``members`` live workers with other vector folders
    would split the vector store (None: it would not, or the broker could not tell)."""
    if settings.vector_store == "topic" or settings.qdrant_url or not members:
        return None
    return (f"refusing to start: consumer group {settings.worker_id!r} already has {members} "
            "worker(s) and this one would keep its vectors in qdrant-client local mode "
            f"under {settings.data_dir / 'qdrant'} — two workers would split the vectors and "
            "recall through one would miss the other's memories. Share one store: set "
            "QDRANT_URL (a Qdrant server) or VECTOR_STORE=topic (one sink writes them).")


def store_client_id(settings: Settings) -> str:
    """The Kafka client id of a worker: names its local vector folder (host + path), so a
    restarted worker (same folder) is not taken for a second one that would split it."""
    import hashlib
    import socket

    where = f"{socket.gethostname()}:{(settings.data_dir / 'qdrant').resolve()}"
    return "breadcrumb-" + hashlib.sha256(where.encode()).hexdigest()[:16]


async def group_members(settings: Settings, attempts: int = 10,
                        delay: float = 1.0) -> int | None:
    """How many workers with ANOTHER vector folder are in this worker's consumer group
    (members under its own client id — itself before a ``kill -9``, still in the group until
    the session times out — do not count). None when the broker cannot tell (no group
    coordinator yet on a fresh broker, a restart): retried ``attempts`` times first."""
    import asyncio

    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.errors import KafkaError

    from breadcrumb.topics.kafka_security import aiokafka_kwargs

    mine = store_client_id(settings)
    for attempt in range(attempts):
        admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap,
                                    **aiokafka_kwargs(settings))
        try:
            await admin.start()
            described = await admin.describe_consumer_groups([settings.worker_id])
        except (TimeoutError, KafkaError, OSError) as exc:
            log.info("consumer group %s not described yet (%r); retrying", settings.worker_id,
                     exc)
            await asyncio.sleep(delay * min(attempt + 1, 3))
            continue
        finally:
            await admin.close()
        members = 0
        for response in described:
            for group in getattr(response, "groups", []):
                # (error, id, state, protocol type, protocol, members); a member is
                # (member id, client id, client host, metadata, assignment)
                for member in (group[-1] if group else []):
                    if len(member) < 2 or member[1] != mine:
                        members += 1
        return members
    return None


async def declare_topics(settings: Settings) -> None:
    """Create the source topics with their partitions and cleanup policy (Faust won't)."""
    from breadcrumb.infra.topic_admin import TopicAdmin
    from breadcrumb.topics.kafka_security import aiokafka_kwargs
    from breadcrumb.topics.names import topic_specs

    admin = TopicAdmin(settings.kafka_bootstrap, replication=settings.kafka_replication,
                       security=aiokafka_kwargs(settings))
    async with admin:
        await admin.declare(topic_specs(settings.topic_prefix, settings.kafka_partitions))


def build_cold_store(settings: Settings) -> Any:
    """Issue 5: S3 when an endpoint or keys are configured, else files under data_dir/cold."""
    from breadcrumb.stores.cold.storage import LocalColdStore, S3ColdStore

    if not (settings.s3_endpoint or settings.s3_access_key):
        return LocalColdStore(settings.data_dir / "cold")
    secret = settings.s3_secret_key.get_secret_value() if settings.s3_secret_key else None
    key = settings.s3_access_key.get_secret_value() if settings.s3_access_key else None
    cold = S3ColdStore(settings.s3_endpoint, settings.s3_bucket, settings.s3_region, key, secret)
    cold.ensure()
    return cold

"""Cluster-mode stores from settings: MySQL/TiDB, Qdrant (qdrant-client), S3, Kafka topics."""

from __future__ import annotations

from typing import Any

from breadcrumb.infra.settings import Settings
from breadcrumb.stores.mysql_store import mysql_store

__all__ = ["build_cold_store", "build_sql_store", "build_vector_index", "declare_topics",
           "mysql_store"]


def build_sql_store(settings: Settings) -> Any:
    """:func:`mysql_store`, opened (its tables created if missing)."""
    store = mysql_store(settings)
    store.open()
    return store


def build_vector_index(settings: Settings, dim: int) -> Any:
    """qdrant-client against a server URL, or local mode under ``data_dir/qdrant``."""
    from qdrant_client import QdrantClient

    from breadcrumb.stores.qdrant_server_index import QdrantServerIndex

    def factory() -> QdrantClient:
        if settings.qdrant_url:
            key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
            return QdrantClient(url=settings.qdrant_url, api_key=key)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        return QdrantClient(path=str(settings.data_dir / "qdrant"))

    index = QdrantServerIndex(factory, settings.qdrant_collection_prefix, dim)
    index.ensure()
    return index


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
    from breadcrumb.stores.cold import LocalColdStore, S3ColdStore

    if not (settings.s3_endpoint or settings.s3_access_key):
        return LocalColdStore(settings.data_dir / "cold")
    secret = settings.s3_secret_key.get_secret_value() if settings.s3_secret_key else None
    key = settings.s3_access_key.get_secret_value() if settings.s3_access_key else None
    cold = S3ColdStore(settings.s3_endpoint, settings.s3_bucket, settings.s3_region, key, secret)
    cold.ensure()
    return cold

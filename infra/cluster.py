"""Cluster-mode wiring: MySQL/TiDB + Qdrant (qdrant-client) + Kafka, for API and worker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from breadcrumb.infra.bootstrap import (
    Runtime,
    build_lifecycle,
    build_observer,
    pipeline_config,
    utc_now_iso,
)
from breadcrumb.infra.settings import Settings
from breadcrumb.stores.ports import DeadLetterStore, Embedder, ThreadStateStore
from breadcrumb.streams.service import IngestService, ObserveFn
from breadcrumb.topics.kafka_security import aiokafka_kwargs


def mysql_store(settings: Settings) -> Any:
    """The MySQL-protocol store (TiDB in production, MariaDB in CI), not yet connected.
    TLS when a CA is set."""
    from breadcrumb.stores.mysql_store import MySqlStore

    return MySqlStore(
        host=settings.mysql_host,
        port=settings.mysql_port,
        user=settings.mysql_user,
        password=settings.mysql_password.get_secret_value(),
        database=settings.mysql_database,
        ssl_ca=settings.mysql_ssl_ca,
        ssl_verify_identity=settings.mysql_ssl_verify_identity,
    )


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
    from breadcrumb.topics.names import topic_specs

    admin = TopicAdmin(settings.kafka_bootstrap, replication=settings.kafka_replication,
                       security=aiokafka_kwargs(settings))
    async with admin:
        await admin.declare(topic_specs(settings.topic_prefix, settings.kafka_partitions))


@dataclass
class WorkerParts:
    """The ports a Faust worker needs, built once per process."""

    settings: Settings
    store: Any
    index: Any
    embedder: Embedder
    clock: Callable[[], str]
    observer: ObserveFn | None = None
    lifecycle: Any = None  # issue 5: LifecycleService publishing to a CollectingChangelog
    generation: str = "main"  # which generation of derived stores this worker fills
    catalog: Any = None  # stores.cluster_generations.ClusterCatalog (the alias)
    publishing: bool = True  # only the current generation's worker publishes
    positions: dict[int, int] = field(default_factory=dict)  # partition -> last offset done

    def service_for(self, states: ThreadStateStore, letters: DeadLetterStore) -> IngestService:
        """An ingest service bound to one message's state and dead-letter capture."""
        return IngestService(
            self.store, self.store, letters, _Mirrored(states, self.store), self.index,
            self.embedder, self.clock, pipeline_config(self.settings), source="kafka",
            observer=self.observer,
            on_observation=self.lifecycle.on_observation if self.lifecycle else None,  # issue 5
        )

    def close(self) -> None:
        self.index.close()
        self.store.close()


class _Mirrored:
    """State goes to the Faust table (truth) and to SQL (so the API can count open windows)."""

    def __init__(self, primary: ThreadStateStore, mirror: ThreadStateStore) -> None:
        self.primary = primary
        self.mirror = mirror

    def get_state(self, key: str) -> dict[str, Any] | None:
        return self.primary.get_state(key)

    def put_state(self, key: str, state: dict[str, Any]) -> None:
        self.primary.put_state(key, state)
        self.mirror.put_state(key, state)


def build_worker_parts(settings: Settings, embedder: Embedder | None = None,
                       index: Any = None) -> WorkerParts:
    """Ports of one generation (``settings`` from ``generation_settings``)."""
    from breadcrumb.infra.bootstrap import build_embedder

    embedder = embedder or build_embedder(settings)
    store = build_sql_store(settings)
    if index is None:
        index = build_vector_index(settings, embedder.dim)
    else:
        index.ensure()
    parts = WorkerParts(settings, store, index, embedder, utc_now_iso, build_observer(settings))
    if settings.lifecycle_enabled:  # issue 5: the Faust agent/timer send what it collects
        from breadcrumb.streams.lifecycle import CollectingChangelog

        parts.lifecycle, _raw = build_lifecycle(settings, store, index, build_cold_store(settings),
                                                CollectingChangelog())
    return parts


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


def build_cluster_runtime(
    settings: Settings, embedder: Embedder, index: Any | None = None
) -> Runtime:
    """The query service in cluster mode: publishes to Kafka, reads the MySQL database and
    Qdrant collections of the generation the alias names (and follows the alias)."""
    from breadcrumb.infra.cluster_generations import ClusterGenerations
    from breadcrumb.stores.cluster_generations import generation_settings
    from breadcrumb.streams.kafka_gateway import KafkaGateway
    from breadcrumb.streams.lifecycle import KafkaChangelog
    from breadcrumb.topics.names import MEMORY_STATUS

    # issue 5: manual changes publish to memory-status; recall reads archived ranges from S3
    changelog = KafkaChangelog(settings.kafka_bootstrap, settings.topic(MEMORY_STATUS),
                               security=aiokafka_kwargs(settings))
    gens = ClusterGenerations(settings, embedder, changelog, shared_index=index)
    view = gens.open_view(gens.catalog.current())
    gateway = KafkaGateway(settings, view.store, utc_now_iso)
    gateway.group = generation_settings(settings, view.name).worker_id
    runtime = Runtime(
        settings=settings,
        gateway=gateway,
        recall=view.recall,
        raw=view.raw,
        memories=view.store,
        dead_letters=view.store,
        index=view.index,
        embedder=embedder,
        store=view.store,
        lifecycle=view.lifecycle,
        generation=view.name,
        generation_manager=gens,
        extra_stats=lambda: {"consumer_lag": gateway.unprocessed(), "mode": "cluster",
                             "generation": runtime.generation},
        starters=[gateway.start, changelog.start, gens.start_following],
        stoppers=[gens.close, gateway.stop, changelog.stop],
    )
    gens.runtime = runtime
    return runtime

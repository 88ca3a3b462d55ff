"""Cluster-mode wiring: MySQL/TiDB + Qdrant (qdrant-client) + Kafka, for API and worker."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from breadcrumb.infra.cluster_stores import (  # noqa: F401  (re-exported)
    build_cold_store,
    build_sql_store,
    build_vector_index,
    declare_topics,
    mysql_store,
)
from breadcrumb.infra.worker_parts import WorkerParts, build_worker_parts  # noqa: F401
from breadcrumb.query_api.runtime import Runtime
from breadcrumb.settings import Settings
from breadcrumb.stores.clock import utc_now_iso
from breadcrumb.stores.ports import Embedder
from breadcrumb.topics.kafka_security import aiokafka_kwargs

if TYPE_CHECKING:
    from breadcrumb.infra.cluster_generations import ClusterGenerations


def build_cluster_runtime(
    settings: Settings, embedder: Embedder, index: Any | None = None
) -> Runtime:
    """The query service in cluster mode: publishes to Kafka, reads the MySQL database and
    Qdrant collections of the generation the alias names (and follows the alias)."""
    from breadcrumb.infra.cluster_generations import ClusterGenerations
    from breadcrumb.stores.generations.cluster import generation_settings
    from breadcrumb.streams.kafka.gateway import KafkaGateway
    from breadcrumb.streams.lifecycle.runners import KafkaChangelog
    from breadcrumb.topics.names import MEMORY_STATUS

    # issue 5: manual changes publish to memory-status; recall reads archived ranges from S3
    changelog = KafkaChangelog(settings.kafka_bootstrap, settings.topic(MEMORY_STATUS),
                               security=aiokafka_kwargs(settings))
    sink = _vector_sink(settings, embedder, index)  # issue 14: VECTOR_STORE=topic
    if sink is not None:
        index = sink.sink.index
    gens = ClusterGenerations(settings, embedder, changelog, shared_index=index)
    view = gens.open_view(gens.catalog.current())
    gateway = KafkaGateway(settings, view.store, utc_now_iso,
                           declare=lambda: declare_topics(settings))
    gateway.group = generation_settings(settings, view.name).worker_id
    runtime = Runtime(
        settings=settings,
        gateway=gateway,
        recall=view.recall,
        raw=view.raw,
        memories=view.store.memories,
        dead_letters=view.store.dead_letters,
        index=view.index,
        embedder=embedder,
        audit=view.store.audit,
        browse=view.store.browse,
        explore=view.store.explore,
        lifecycle=view.lifecycle,
        generation=view.name,
        generation_manager=gens,
        extra_stats=lambda: {"consumer_lag": gateway.unprocessed(), "mode": "cluster",
                             "generation": runtime.generation},
        starters=[gateway.start, changelog.start, gens.start_following,
                  *([sink.start] if sink else [])],
        stoppers=[*([sink.stop] if sink else []), gens.close, gateway.stop, changelog.stop],
    )
    gens.runtime = runtime
    return runtime


def cluster_generations(runtime: Runtime) -> ClusterGenerations:
    """The cluster runtime's generation manager (``build_cluster_runtime`` sets it)."""
    from breadcrumb.infra.cluster_generations import ClusterGenerations

    gens = runtime.generation_manager
    if not isinstance(gens, ClusterGenerations):
        raise TypeError("not a cluster runtime (no ClusterGenerations)")
    return gens


def _vector_sink(settings: Settings, embedder: Embedder, index: Any) -> Any:
    """With ``VECTOR_STORE=topic`` the query service owns the vector store: the one sink
    of the ``vectors`` topic writes it (a Qdrant server at QDRANT_URL, else Qdrant Edge
    under the data dir)."""
    from breadcrumb.infra.cluster_stores import build_sink_index, sink_group
    from breadcrumb.stores.vectors.sink.topic import SinkThread, TopicVectorIndex, VectorSink

    if settings.vector_store != "topic" or not (index is None
                                                or isinstance(index, TopicVectorIndex)):
        return None  # a worker's topic index is write-only: the API reads the sink's store
    from breadcrumb.topics.names import VECTORS

    store = build_sink_index(settings, embedder.dim)
    return SinkThread(VectorSink(store, settings.kafka_bootstrap, settings.topic(VECTORS),
                                 sink_group(settings), **aiokafka_kwargs(settings)))

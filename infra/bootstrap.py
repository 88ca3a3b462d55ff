"""The one place that builds clients and stores from settings and wires them together.

``build_runtime`` picks the mode; the wiring lives in ``infra.embedded`` and
``infra.cluster``, the parts both share in ``infra.parts``. ``Runtime`` (query_api) and
the clock (stores) live where the lower layers may use them; they are re-exported here.
"""

from __future__ import annotations

from breadcrumb.infra.parts import (  # noqa: F401  (re-exported: entry points import them here)
    build_embedder,
    build_lifecycle,
    build_observer,
    build_recall_llm,
    observer_stats,
    pipeline_config,
    score_weights,
    sweeper_for,
)
from breadcrumb.query_api.runtime import Runtime
from breadcrumb.settings import Settings
from breadcrumb.stores.clock import utc_now, utc_now_iso  # noqa: F401  (re-exported)
from breadcrumb.stores.ports import Embedder

__all__ = ["Runtime", "build_runtime", "build_embedded_runtime", "build_embedder",
           "build_lifecycle", "build_observer", "build_recall_llm", "observer_stats",
           "pipeline_config", "score_weights", "sweeper_for", "utc_now", "utc_now_iso"]


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

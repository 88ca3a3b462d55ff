"""The ports a Faust worker needs (cluster mode), built once per process.

Apart from ``infra.cluster`` so that the generation manager (``infra.cluster_generations``),
which builds a worker's parts for a replay, does not import the module that builds it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from breadcrumb.infra.cluster_stores import (
    build_cold_store,
    build_sql_store,
    build_vector_index,
)
from breadcrumb.infra.parts import (
    build_embedder,
    build_lifecycle,
    build_observer,
    pipeline_config,
)
from breadcrumb.settings import Settings
from breadcrumb.stores.clock import utc_now_iso
from breadcrumb.stores.ports import DeadLetterStore, Embedder, RawEventStore, ThreadStateStore
from breadcrumb.stores.sql.mysql.store import MySqlStore
from breadcrumb.streams.service import IngestService, ObserveFn


@dataclass
class WorkerParts:
    """The ports a Faust worker needs, built once per process."""

    settings: Settings
    store: MySqlStore
    index: Any
    embedder: Embedder
    clock: Callable[[], str]
    observer: ObserveFn | None = None
    lifecycle: Any = None  # issue 5: LifecycleService publishing to a CollectingChangelog
    generation: str = "main"  # which generation of derived stores this worker fills
    catalog: Any = None  # stores.generations.cluster.ClusterCatalog (the alias)
    publishing: bool = True  # only the current generation's worker publishes
    positions: dict[int, int] = field(default_factory=dict)  # partition -> last offset done

    def service_for(self, states: ThreadStateStore, letters: DeadLetterStore,
                    mirror: ThreadStateStore | None = None,
                    raw: RawEventStore | None = None) -> IngestService:
        """An ingest service bound to one message's state and dead-letter capture (states
        are mirrored to ``mirror`` and raw events kept in ``raw``: the SQL store unless a
        batch collects them)."""
        return IngestService(
            self.store.events if raw is None else raw, self.store.memories, letters,
            _Mirrored(states, self.store.states if mirror is None else mirror), self.index,
            self.embedder, self.clock, pipeline_config(self.settings), source="kafka",
            observer=self.observer,
            hooks=self.lifecycle,  # issue 5: the lifecycle hears of each memory
        )  # issue 26: erased scopes are dropped by the ingest core (the unit's store)

    def close(self) -> None:
        self.index.close()
        self.store.close()


class _Mirrored:
    """State goes to the message's (or batch's) working copy, read from SQL in its
    transaction, and back to SQL (once per message, or once per thread of a batch)."""

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
    embedder = embedder or build_embedder(settings)
    store = build_sql_store(settings)
    if index is None:
        index = build_vector_index(settings, embedder.dim)
    else:
        index.ensure()
    parts = WorkerParts(settings, store, index, embedder, utc_now_iso, build_observer(settings))
    if settings.lifecycle_enabled:  # issue 5: the Faust agent/timer send what it collects
        from breadcrumb.streams.lifecycle.service import CollectingChangelog

        parts.lifecycle, _raw = build_lifecycle(settings, store, index, build_cold_store(settings),
                                                CollectingChangelog())
    return parts



"""What the query service runs on: the ``Runtime`` (built by ``infra``, read by the routes)
and the one ``Generations`` interface both modes implement for the admin routes."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from breadcrumb.query_api.recall import RecallService
from breadcrumb.settings import Settings
from breadcrumb.stores.ports import (
    AppliesLog,
    DeadLetterStore,
    Embedder,
    OwnStore,
    RawEventStore,
    VectorIndex,
)
from breadcrumb.stores.ports.tables import AuditTrail, Explorer, MemoryBrowse, MemoryRows, Store
from breadcrumb.streams.embedded.replay import Progress
from breadcrumb.streams.gateway import Gateway, MeasuresFreshness, TwoSpeeds
from breadcrumb.streams.lifecycle.service import LifecycleService

log = logging.getLogger(__name__)


class Generations(Protocol):
    """Generations of the derived stores, the same calls in both modes (admin routes).

    Embedded: ``infra.embedded.EmbeddedGenerations`` (folders + ``generations.json``);
    cluster: ``infra.cluster_generations.ClusterGenerations`` (databases + alias table).
    """

    def names(self) -> list[str]: ...

    def describe(self) -> dict[str, Any]: ...

    async def replay(self, name: str | None,
                     on_progress: Callable[[Progress], None] | None) -> Progress:
        """Build generation ``name`` from the event log, switch the alias, serve it."""
        ...

    def remove(self, name: str) -> None:
        """Delete an old generation; ``ValueError`` when it is current or unknown."""
        ...


class GenerationHandle(Protocol):
    """One open generation of derived stores (embedded: ``infra.embedded.Generation``)."""

    name: str
    index: VectorIndex  # the generation's vector index (forget erases its points too)

    def close(self, log_store: Store) -> None: ...


@dataclass
class Runtime:
    """Everything the query service and the CLI use, built once: ports of the current
    generation (memories, raw events, audit, browse, explore, the index ...). The SQL stores the
    admin routes act on whole (forget, re-drive, readiness) are the gateway's:
    :meth:`log_store` and :meth:`derived_store`."""

    settings: Settings
    gateway: Gateway
    recall: RecallService
    raw: RawEventStore
    memories: MemoryRows
    dead_letters: DeadLetterStore
    index: VectorIndex
    embedder: Embedder
    audit: AuditTrail  # who changed which field of a memory
    browse: MemoryBrowse  # pages of memories, versions, threads, dead letters
    explore: Explorer  # the explorer's tenants, threads by last event, fact keys
    lifecycle: LifecycleService | None = None  # issue 5: the status/tier owner
    generation: str = "main"  # embedded: the generation of derived stores in use
    generations: dict[str, GenerationHandle] = field(default_factory=dict)
    generation_manager: Generations | None = None  # the Generations of this mode (infra)
    extra_stats: Callable[[], dict[str, Any]] = field(default=lambda: {})
    starters: list[Callable[[], None]] = field(default_factory=list)
    stoppers: list[Callable[[], None]] = field(default_factory=list)
    # embedded: starts the vector index's background builds (one of ``starters``; the CLI's
    # in-process ingest starts only this: a long import keeps its unindexed points bounded)
    index_builds: Callable[[], None] | None = None

    def runner(self) -> AppliesLog | None:
        """The gateway when it applies the event log in this process (embedded), else None."""
        return self.gateway if isinstance(self.gateway, AppliesLog) else None

    def log_store(self) -> Store | None:
        """The SQL store intake writes (embedded: the event log; cluster: the gateway's
        current tables); None for a gateway without one."""
        own: Store | None = self.gateway.store if isinstance(self.gateway, OwnStore) else None
        return own

    def derived_store(self) -> Store | None:
        """The current generation's SQL store: the one the embedded runner's processors
        write, else the gateway's own (cluster: the current generation's tables)."""
        runner = self.runner()
        derived: Store | None = runner.derived if runner is not None else None
        return derived if derived is not None else self.log_store()

    def start(self) -> None:
        for fn in self.starters:
            fn()

    def stop(self) -> None:
        self.recall.flush_usage()  # write pending usage before the stores close
        for fn in reversed(self.stoppers):
            try:
                fn()
            except Exception:  # shutting down: report every failure, stop the rest anyway
                log.exception("error while stopping %s", fn)


def stats(runtime: Runtime) -> dict[str, Any]:
    """``GET /v1/stats``: counts, pending and memories by status and tier."""
    counters = runtime.gateway.counters()
    return {
        "events_received": counters.get("events_received", 0),
        "events_accepted": counters.get("events_accepted", 0),
        "events_processed": counters.get("events_processed", 0),
        "duplicates": counters.get("duplicates", 0),
        # failure policy: messages given up on, retried attempts, redeliveries skipped
        "dead_lettered": counters.get("dead_lettered", 0),
        "retries": counters.get("retries", 0),
        "redeliveries": counters.get("redeliveries", 0),
        "pending": runtime.gateway.pending(),
        "unprocessed": runtime.gateway.unprocessed(),
        "dead_letters": runtime.dead_letters.count_dead_letters(),
        "memories": runtime.memories.memory_counts(),
        **_freshness(runtime.gateway),
        **runtime.extra_stats(),
    }


def _freshness(gateway: Gateway) -> dict[str, Any]:
    """``freshness``: accepted → recallable / → memory, p50 / p95 ms (modes that measure it)."""
    out: dict[str, Any] = {}
    if isinstance(gateway, MeasuresFreshness):
        out["freshness"] = gateway.freshness()
    if isinstance(gateway, TwoSpeeds):  # memories written, their chunks' vectors not yet
        out["passages_pending"] = gateway.passages_pending()
    return out

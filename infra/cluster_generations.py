"""Cluster mode: which generation the query service reads, following the alias, and replay.

A *view* is one generation's SQL store, vector index, lifecycle and recall service. The
query service starts on the generation the alias names and polls the alias every
``generation_poll_seconds``; when it moves, the new view is opened first and then swapped
in, so no request ever sees a half-open generation. A replay started in this process
(``POST /v1/admin/replay``) builds the new generation with a Faust app of its own (new
consumer group, earliest offset), switches the alias when it has caught up, and keeps
that app running as the new generation's worker.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from breadcrumb.infra.cluster_stores import build_cold_store, build_sql_store, build_vector_index
from breadcrumb.infra.parts import build_lifecycle, build_recall_llm, score_weights
from breadcrumb.query_api.recall import RecallService
from breadcrumb.query_api.runtime import Runtime
from breadcrumb.settings import Settings
from breadcrumb.stores.clock import utc_now
from breadcrumb.stores.generations.cluster import ClusterCatalog, generation_settings
from breadcrumb.stores.ports import Embedder, SettlesOwed
from breadcrumb.stores.sql.mysql.store import MySqlStore
from breadcrumb.streams.embedded.replay import Progress

log = logging.getLogger(__name__)


@dataclass
class View:
    """The derived stores of one generation, as the query service reads them."""

    name: str
    store: MySqlStore
    index: Any
    lifecycle: Any
    raw: Any
    recall: RecallService


class ClusterGenerations:
    """Opens views, follows the alias, runs replays started in this process."""

    def __init__(self, settings: Settings, embedder: Embedder, changelog: Any,
                 shared_index: Any = None) -> None:
        self.settings = settings
        self.embedder = embedder
        self.changelog = changelog
        self.shared_index = shared_index
        self.catalog = ClusterCatalog(settings)
        self.runtime: Runtime | None = None
        self.local_parts: Any = None  # the in-process worker's parts (worker --serve-api)
        self.views: dict[str, View] = {}
        self.replay_apps: list[tuple[Any, Any]] = []  # (faust app, parts) started here
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- the catalog (query_api.runtime.Generations) ---------------------------------------
    def names(self) -> list[str]:
        return list(self.catalog.names())

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = self.catalog.describe()
        return described

    # --- views ---------------------------------------------------------------------
    def index_for(self, gen: Settings) -> Any:
        """The vector index of a generation (on the shared client when there is one)."""
        if self.shared_index is None:
            return build_vector_index(gen, self.embedder.dim)
        if gen.qdrant_collection_prefix == self.shared_index.prefix:
            return self.shared_index
        index = self.shared_index.sibling(gen.qdrant_collection_prefix)
        index.ensure()
        return index

    def open_view(self, name: str) -> View:
        gen = generation_settings(self.settings, name)
        store = build_sql_store(gen)
        index = self.index_for(gen)
        lifecycle, raw = build_lifecycle(gen, store, index, build_cold_store(gen), self.changelog)
        recall = RecallService(index, store.memories, raw, self.embedder, score_weights(gen),
                               utc_now, **build_recall_llm(gen), states=store.states)
        view = View(name, store, index, lifecycle, raw, recall)
        self.views[name] = view
        return view

    def adopt(self, name: str) -> None:
        """Open generation ``name`` and point the runtime at it (old views stay open for
        requests in flight; they close with the runtime)."""
        with self._lock:
            runtime = self.runtime
            if runtime is None or runtime.generation == name:
                return
            built_with = self.catalog.describe()["generations"].get(name, {}).get("embedder")
            if built_with not in (None, self.embedder.name):
                log.error("generation %s was built with embedder %s, this service runs %s: "
                          "restart it with that embedder to follow the alias", name, built_with,
                          self.embedder.name)
                return
            view = self.views.get(name) or self.open_view(name)
            runtime.recall, runtime.raw = view.recall, view.raw
            runtime.memories, runtime.audit = view.store.memories, view.store.audit
            runtime.index, runtime.lifecycle, runtime.browse = view.index, view.lifecycle, \
                view.store.browse
            runtime.explore = view.store.explore
            runtime.dead_letters = view.store.dead_letters
            from breadcrumb.streams.kafka.gateway import KafkaGateway

            gateway = runtime.gateway
            if isinstance(gateway, KafkaGateway):
                gateway.store = view.store  # dedupe and counters against the current tables
                gateway.group = generation_settings(self.settings, name).worker_id
            runtime.generation = name
            log.info("query service now reads generation %s", name)

    # --- following the alias -------------------------------------------------------------
    def start_following(self) -> None:
        self._thread = threading.Thread(target=self._follow, name="generation-alias",
                                        daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        """Poll the alias; while the SQL store is down, back off (doubling up to
        30 s, one line when it goes and when it returns)."""
        from breadcrumb.streams.failure_policy import describe, is_transient

        period = self.settings.generation_poll_seconds
        wait, down = period, None
        longest = max(period, 30.0)
        while not self._stop.wait(wait):
            try:
                self.adopt(self.catalog.current())
                gateway = self.runtime.gateway if self.runtime is not None else None
                if isinstance(gateway, SettlesOwed):
                    gateway.settle()  # counters and letters owed from an outage
            except Exception as exc:  # the old view keeps answering; try again later
                if not is_transient(exc):
                    log.exception("could not follow the generation alias")
                    wait = period
                    continue
                if down is None:
                    log.warning("cannot read the generation alias (%s); still serving "
                                "generation %s, retrying with backoff",
                                " ".join(describe(exc).split()),
                                self.runtime.generation if self.runtime is not None else "?")
                down = describe(exc)
                wait = min(wait * 2, longest)
                continue
            if down is not None:
                log.info("generation alias readable again")
            wait, down = period, None

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        for view in self.views.values():
            view.store.close()
            if view.index is not self.shared_index:
                view.index.close()

    async def aclose(self) -> None:
        """Stop the Faust apps a replay started in this process."""
        for app, parts in self.replay_apps:
            await app.stop()
            parts.close()
        self.replay_apps.clear()

    # --- replay and removal ----------------------------------------------------------------
    async def replay(self, name: str | None, on_progress: Callable[[Progress], None] | None,
                     keep_running: bool = True) -> Progress:
        """Build generation ``name`` from the earliest offset, switch, adopt it here."""
        from breadcrumb.infra.worker_parts import build_worker_parts
        from breadcrumb.streams.kafka.replay import build_generation

        name = name or utc_now().strftime("g%Y%m%dT%H%M%S")
        progress, app, parts = await build_generation(self, name, on_progress,
                                                      build_worker_parts)
        if self.local_parts is not None:
            self.local_parts.publishing = False  # the old generation's worker goes quiet
        await asyncio.get_running_loop().run_in_executor(None, self.adopt, name)
        if keep_running:
            self.replay_apps.append((app, parts))
        else:
            await app.stop()
            parts.close()
        return progress

    def remove(self, name: str) -> None:
        """Drop an old generation's database and collections."""
        if self.runtime is not None and name == self.runtime.generation:
            raise ValueError(f"generation {name!r} is in use here; switch first")
        gen = self.catalog.remove(name)
        view = self.views.pop(name, None)
        if view is not None:
            view.store.close()
        self.index_for(gen).drop()

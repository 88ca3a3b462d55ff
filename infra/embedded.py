"""Embedded-default wiring: the event log, the current generation of derived stores, and
replay into a new generation with an atomic switch of the alias.

Layout under ``data_dir``: ``breadcrumb.sqlite3`` (the event log — the truth — plus the
derived tables of generation ``main``), ``vectors/`` (main's Qdrant Edge shards),
``cold/`` (archived sources), ``generations/<name>/`` (replayed generations) and
``generations.json`` (which generation is current).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from breadcrumb.infra.footprint import FootprintProbe
from breadcrumb.infra.parts import (
    build_lifecycle,
    build_observer,
    build_recall_llm,
    observer_stats,
    pipeline_config,
    score_weights,
    sweeper_for,
)
from breadcrumb.query_api.recall import RecallService
from breadcrumb.query_api.runtime import Runtime
from breadcrumb.settings import Settings
from breadcrumb.stores import data_dir
from breadcrumb.stores.clock import utc_now, utc_now_iso
from breadcrumb.stores.data_dir import index_failure
from breadcrumb.stores.generations.embedded import MAIN, GenerationCatalog, GenerationPaths
from breadcrumb.stores.ports import Embedder, WriteBacklog
from breadcrumb.stores.ports.tables import Store
from breadcrumb.streams.embedded.replay import Progress, Replayer
from breadcrumb.streams.service import IngestService

if TYPE_CHECKING:
    from breadcrumb.stores.sql.sqlite.store import SqliteStore
    from breadcrumb.streams.embedded.runner import EmbeddedRunner

log = logging.getLogger(__name__)


@dataclass
class Generation:
    """One generation of derived stores and the services bound to it."""

    name: str
    store: SqliteStore  # this generation's derived tables
    index: Any  # QdrantEdgeIndex
    raw: Any  # archive-aware raw events (what recall reads)
    lifecycle: Any
    service: IngestService
    recall: RecallService
    sweeper: Any
    optimizer: Any  # stores.vectors.edge.maintenance.OptimizeJob (HNSW builds when idle)

    def close(self, log_store: Store) -> None:
        self.sweeper.stop()
        self.optimizer.stop()
        self.index.close()
        if self.store is not log_store:
            self.store.close()


def open_generation(settings: Settings, embedder: Embedder, paths: GenerationPaths,
                    log_store: SqliteStore) -> Generation:
    """Open (creating if needed) the derived stores of one generation and wire them."""
    from breadcrumb.stores.cold.storage import LocalColdStore
    from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
    from breadcrumb.stores.vectors.edge.maintenance import OptimizeJob

    if paths.name == MAIN:
        store = log_store
    else:
        store = open_sqlite(paths.sqlite)
    # issue 49: the SQLite store keeps its chunk rows, recall reads their texts from it
    index = QdrantEdgeIndex(paths.vectors, embedder.dim,
                            quantization=settings.vector_quantization, chunk_texts=False)
    try:
        index.ensure()
    except Exception as exc:  # a shard that does not load: say which and what to do
        if store is not log_store:
            store.close()
        raise index_failure(paths.vectors, exc) from exc
    cold = LocalColdStore(settings.data_dir / "cold")
    lifecycle, raw = build_lifecycle(settings, store, index, cold)
    service = IngestService(
        store.events, store.memories, store.dead_letters, store.states, index, embedder,
        utc_now_iso, pipeline_config(settings),
        observer=build_observer(settings),
        hooks=lifecycle if settings.lifecycle_enabled else None,
    )  # issue 26: erased scopes are dropped by the ingest core (the unit's store)
    recall = RecallService(index, store.memories, raw, embedder, score_weights(settings),
                           utc_now, **build_recall_llm(settings), states=store.states)
    optimizer = OptimizeJob(index, settings.index_optimize_min_points,
                            settings.index_optimize_idle_seconds,
                            settings.index_optimize_check_seconds,
                            busy_points=settings.index_optimize_busy_points)
    return Generation(paths.name, store, index, raw, lifecycle, service, recall,
                      sweeper_for(settings, lifecycle), optimizer)


def build_embedded_runtime(settings: Settings, embedder: Embedder) -> Runtime:
    """The event log + the current generation; processors run in-process."""
    from breadcrumb.streams.embedded.runner import EmbeddedRunner
    from breadcrumb.streams.gateway import limits_of

    lock = data_dir.acquire(settings.data_dir)  # one owner per data dir (re-entrant)
    log_store = None
    try:
        data_dir.check_disk(settings.data_dir, settings.min_free_disk_mb)
        log_store = open_sqlite(settings.data_dir / "breadcrumb.sqlite3")
        catalog = GenerationCatalog(settings.data_dir)
        _fail_abandoned(catalog)  # a replay killed mid-way
        gen = open_generation(settings, embedder, catalog.paths(catalog.current()), log_store)
    except BaseException:
        if log_store is not None:
            log_store.close()
        lock.release()
        raise
    runner = EmbeddedRunner(log_store, gen.service, utc_now_iso, settings.idle_flush_seconds,
                            derived=gen.store, limits=limits_of(settings),
                            batch_entries=settings.derive_batch_entries,
                            batch_max_ms=settings.derive_batch_max_ms,
                            two_speeds=settings.derive_two_speeds)
    runtime = Runtime(
        settings=settings, gateway=runner, recall=gen.recall, raw=gen.raw,
        memories=gen.store.memories, dead_letters=_DeadLetters(log_store, runner),
        index=gen.index, embedder=embedder, audit=gen.store.audit, browse=gen.store.browse,
        explore=gen.store.explore,
        lifecycle=gen.lifecycle,
        extra_stats=lambda: {"consumer_lag": 0, "mode": "embedded",
                             "generation": runtime.generation,
                             "index_unoptimized_points": gen_index_pending(runtime),
                             **observer_stats(runner.service.observer),
                             "footprint": probe.snapshot()},
    )
    probe = FootprintProbe(settings.data_dir, lambda: runtime.raw.count_events())
    runtime.generation = gen.name
    runtime.starters = [runner.start, gen.sweeper.start, gen.optimizer.start]
    runtime.index_builds = gen.optimizer.start
    runtime.stoppers = [lock.release, log_store.close,
                        lambda: _close_current(runtime, log_store), runner.stop]
    runtime.generations = {gen.name: gen}
    runtime.generation_manager = EmbeddedGenerations(runtime)
    return runtime


def open_sqlite(path: Path) -> SqliteStore:
    """Open a SqliteStore; failures become one-line :class:`StartupError`s."""
    import sqlite3

    from breadcrumb.stores.sql.sqlite.store import SqliteStore

    store = SqliteStore(path)
    try:
        store.open()
        store.probe_read()
    except sqlite3.DatabaseError as exc:
        store.close()
        raise data_dir.sqlite_failure(path, exc) from exc
    return store
class EmbeddedGenerations:
    """The embedded :class:`~breadcrumb.query_api.runtime.Generations`: folders under the
    data dir and ``generations.json``; a replay runs in a daemon thread of its own."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.catalog = GenerationCatalog(runtime.settings.data_dir)

    def names(self) -> list[str]:
        return self.catalog.names()

    def describe(self) -> dict[str, Any]:
        return self.catalog.describe()

    async def replay(self, name: str | None,
                     on_progress: Callable[[Progress], None] | None) -> Progress:
        """:func:`replay` in a daemon thread: a long replay holds neither the event loop
        nor the process's exit."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Progress] = loop.create_future()

        def settle(result: Progress | None, error: BaseException | None) -> None:
            if done.done():
                return
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(result)  # type: ignore[arg-type]

        def run() -> None:
            try:
                outcome: tuple[Progress | None, BaseException | None] = (
                    replay(self.runtime, name, on_progress), None)
            except BaseException as exc:  # handed to the awaiting task
                outcome = (None, exc)
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
                loop.call_soon_threadsafe(settle, *outcome)

        threading.Thread(target=run, name="breadcrumb-replay", daemon=True).start()
        return await done

    def remove(self, name: str) -> None:
        remove_generation(self.runtime, name)


def gen_index_pending(runtime: Runtime) -> int:
    """Points written to the current vector index since its last optimize()."""
    index = runtime.index
    return int(index.pending_writes()[0]) if isinstance(index, WriteBacklog) else 0


class _DeadLetters:
    """Intake rejections live with the log; processing rejections with the generation."""

    def __init__(self, log_store: SqliteStore, runner: EmbeddedRunner) -> None:
        self.log_store = log_store
        self.runner = runner

    def put_dead_letter(self, letter: Any) -> None:
        self.log_store.dead_letters.put_dead_letter(letter)

    def count_dead_letters(self) -> int:
        derived = self.runner.derived
        extra = 0 if derived is self.log_store else derived.dead_letters.count_dead_letters()
        return int(self.log_store.dead_letters.count_dead_letters()) + int(extra)

    def list_dead_letters(self, limit: int = 100) -> list[Any]:
        return list(self.log_store.dead_letters.list_dead_letters(limit))


def _close_current(runtime: Runtime, log_store: Store) -> None:
    for gen in runtime.generations.values():
        gen.close(log_store)


def replay(runtime: Runtime, name: str | None = None,
           on_progress: Callable[[Progress], None] | None = None,
           embedder: Embedder | None = None) -> Progress:
    """Rebuild every derived store from the event log into a new generation, then switch.

    Queries keep being answered by the current generation until the switch; the switch
    happens between two log entries with the processor paused, so nothing is lost or
    applied twice. The old generation stays on disk until ``remove_generation``.
    """
    settings = runtime.settings
    runner = _runner_of(runtime)
    catalog = GenerationCatalog(settings.data_dir)
    name = name or utc_now().strftime("g%Y%m%dT%H%M%S")
    embedder = embedder or runtime.embedder  # a replay may switch to another embedder
    _fail_abandoned(catalog)
    paths = catalog.create(name, {"created_at": utc_now_iso(), "embedder": embedder.name,
                                  "dim": embedder.dim, "llm_model": settings.llm_model})
    gen = open_generation(settings, embedder, paths, runner.store)
    # issue 49: the new generation's index builds while the log is replayed into it; its
    # unindexed points otherwise sit in the mutable segment's heap until the switch (a
    # million-event replay: 3.2 KB of anonymous memory per replayed entry)
    gen.optimizer.start()
    progress = Progress(name, started=_monotonic())
    replayer = Replayer(runner.store.log, gen.store, gen.service, progress, on_progress)
    try:
        while replayer.catch_up() and replayer.remaining() > 100:
            pass  # the live log keeps growing: converge before pausing the processor
        with runner.paused():
            replayer.catch_up()
            _carry_over_changes(runtime.lifecycle, gen.lifecycle)
            catalog.switch(name)
            _adopt(runtime, gen)
            runtime.embedder = embedder
    except Exception as exc:
        progress.state, progress.error = "failed", repr(exc)
        catalog.mark(name, state="failed", error=repr(exc))
        gen.close(runner.store)
        raise
    catalog.mark(name, state="current", events=progress.applied)
    progress.state = "done"  # last: a caller that sees "done" finds the catalog written
    return progress


def _fail_abandoned(catalog: GenerationCatalog) -> None:
    """One process owns a data dir and runs one replay at a time: a generation still
    ``building`` when this one opens or starts a replay was left by a killed replay."""
    from breadcrumb.streams.embedded.replay import abandoned_builds

    for stale in abandoned_builds(catalog.describe()["generations"], utc_now(), 0.0):
        log.warning("generation %s: its replay stopped before the switch; marked failed", stale)
        catalog.mark(stale, state="failed", error="replay stopped before the switch")


def remove_generation(runtime: Runtime, name: str) -> None:
    """Delete an old generation; its stores are closed first if this process opened them."""
    catalog = GenerationCatalog(runtime.settings.data_dir)
    if name == runtime.generation:
        raise ValueError(f"generation {name!r} is current; switch first")
    gen = runtime.generations.pop(name, None)
    if gen is not None:
        gen.close(_runner_of(runtime).store)
    catalog.remove(name)


def _adopt(runtime: Runtime, gen: Generation) -> None:
    """Point the runtime at the new generation; in-flight requests finish on the old one."""
    old = runtime.generations.get(runtime.generation)
    _runner_of(runtime).use_generation(gen.store, gen.service)
    runtime.recall, runtime.raw, runtime.memories = gen.recall, gen.raw, gen.store.memories
    runtime.index, runtime.lifecycle = gen.index, gen.lifecycle
    runtime.audit, runtime.browse = gen.store.audit, gen.store.browse
    runtime.explore = gen.store.explore
    runtime.generations[gen.name] = gen
    runtime.generation = gen.name
    if isinstance(old, Generation):
        old.sweeper.stop()
        old.optimizer.stop()
    gen.sweeper.start()
    gen.optimizer.start()
    runtime.index_builds = gen.optimizer.start


def _carry_over_changes(old: Any, new: Any) -> None:
    """Manual and sweeper status/tier changes are not in the event log: replay the old
    generation's changelog into the new one (memories that no longer exist are skipped)."""
    if old is None or new is None:
        return
    after = 0
    while changes := old.tables.changelog.read_changes(after, 10_000):  # all, page by page
        new.replay((row[1], row[3]) for row in changes)
        after = changes[-1][0]


def _runner_of(runtime: Runtime) -> Any:
    from breadcrumb.streams.embedded.runner import EmbeddedRunner

    if not isinstance(runtime.gateway, EmbeddedRunner):
        raise ValueError("replay into a generation needs the embedded runtime")
    return runtime.gateway


def _monotonic() -> float:
    import time

    return time.monotonic()

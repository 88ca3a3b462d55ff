"""Liveness, readiness and identity (``/readyz`` and ``/v1/identity`` extend
docs/contract/API.md, additive).

``GET /healthz`` stays liveness: each component (metadata, vectors, embedder) answers.
``GET /readyz`` answers 200 only when this process can do its job, 503 naming every failed
check otherwise:

- ``sql_write``: each SQL store takes its write lock and writes a row (rolled back);
- ``sql_integrity``: schema, first and last row of every table on each call, and
  ``PRAGMA quick_check`` at most every ``ready_integrity_seconds`` (0: every call);
- ``processor``: the embedded processor thread is alive and, with a backlog, has applied
  a log entry within ``ready_stall_seconds``;
- ``vectors``: the vector index takes a write (a no-op delete) and, at most every
  ``ready_integrity_seconds``, flushes its segments;
- ``disk``: at least ``min_free_disk_mb`` free on the data dir's disk (below it,
  ``POST /v1/events`` and ``POST /v1/flush`` answer 507 ``insufficient_storage``).

``GET /v1/identity`` touches no store: ``{"instance", "data_dir", "pid", "mode"}``; the
CLI uses it (and ``/healthz`` carries the same ``instance``) to tell the owner of a data
dir from whatever else listens on a port named by a stale ``server.json``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from breadcrumb.query_api.auth import principal_of
from breadcrumb.query_api.errors import ApiError
from breadcrumb.query_api.runtime import Runtime
from breadcrumb.stores import data_dir
from breadcrumb.stores.data_dir import MB, FreeSpace
from breadcrumb.stores.ports import IndexWriteProbe, IntegrityProbe, SqlWriteProbe
from breadcrumb.streams.embedded.runner import EmbeddedRunner

router = APIRouter()
CheckFn = Callable[[], str | None]  # None: ok; a string: why not


class Readiness:
    """The ``/readyz`` checks of one runtime (keeps the processor's progress between calls)."""

    def __init__(self, runtime: Any, free_space: FreeSpace = data_dir.free_bytes,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.runtime = runtime
        self.free_space = free_space
        self.clock = clock
        self._progress: tuple[Any, float] | None = None  # (cursor, when it last moved)
        self._integrity: dict[str, tuple[float, str]] = {}  # path -> (checked at, result)
        self._flushed_at: float | None = None  # last flush probe of the vector index
        self._lock = threading.Lock()

    def report(self) -> dict[str, Any]:
        """``{"status": "ready"|"not_ready", "failed": [...], "checks": [...]}``."""
        checks = []
        for name, fn in (("sql_write", self._sql_write), ("sql_integrity", self._integrity_ok),
                         ("processor", self._processor), ("vectors", self._vectors),
                         ("disk", self.disk_problem)):
            started = time.perf_counter()
            try:
                problem = fn()
            except Exception as exc:  # readiness reports, never raises
                problem = f"{type(exc).__name__}: {exc}"
            checks.append({"name": name, "ok": problem is None, "detail": problem or "ok",
                           "ms": round((time.perf_counter() - started) * 1000, 1)})
        failed = [c["name"] for c in checks if not c["ok"]]
        return {"status": "not_ready" if failed else "ready", "failed": failed,
                "checks": checks, "mode": self.runtime.settings.mode,
                "generation": self.runtime.generation}

    # --- checks ----------------------------------------------------------------------
    def _stores(self) -> list[Any]:
        gateway = self.runtime.gateway
        log_store = gateway.store if isinstance(gateway, EmbeddedRunner) else None
        stores = [log_store, self.runtime.derived_store()]
        unique: list[Any] = []
        for store in stores:
            if store is not None and all(store is not s for s in unique):
                unique.append(store)
        return unique

    def _sql_write(self) -> str | None:
        for store in self._stores():
            if isinstance(store, SqlWriteProbe):
                store.probe_write()
            else:  # cluster SQL: a read proves the connection
                store.counters.get_counters()
        return None

    def _integrity_ok(self) -> str | None:
        period = self.runtime.settings.ready_integrity_seconds
        for store in self._stores():
            if not isinstance(store, IntegrityProbe):
                continue
            store.probe_read()
            key = str(store.path)
            with self._lock:
                last = self._integrity.get(key)
            if last is None or period == 0 or self.clock() - last[0] >= period:
                last = (self.clock(), store.quick_check())
                with self._lock:
                    self._integrity[key] = last
            if last[1] != "ok":
                return f"{store.path}: {last[1]}"
        return None

    def _processor(self) -> str | None:
        gateway = self.runtime.gateway
        if not isinstance(gateway, EmbeddedRunner):
            return None  # cluster: the workers run elsewhere (their lag is in /v1/stats)
        if not gateway.running():
            return "the processor thread is not running"
        from breadcrumb.streams.embedded.log_unit import applied_seq

        cursor, backlog = applied_seq(gateway.derived), int(gateway.unprocessed())
        now = self.clock()
        with self._lock:
            if self._progress is None or self._progress[0] != cursor or backlog == 0:
                self._progress = (cursor, now)
            since = self._progress[1]
        stall = self.runtime.settings.ready_stall_seconds
        if backlog > 0 and now - since >= stall:
            return (f"stuck: {backlog} log entries waiting, none applied for "
                    f"{now - since:.0f} s (ready_stall_seconds {stall:g})")
        return None

    def _vectors(self) -> str | None:
        index = self.runtime.index
        if not isinstance(index, IndexWriteProbe):
            index.count(exact=False)
            return None
        # the WAL write every call; the flush (tens to hundreds of ms, holding the index
        # lock) at most every ready_integrity_seconds, like quick_check
        period, now = self.runtime.settings.ready_integrity_seconds, self.clock()
        flush = self._flushed_at is None or period == 0 or now - self._flushed_at >= period
        index.probe_write(flush=flush)
        if flush:
            self._flushed_at = now
        return None

    def disk_problem(self) -> str | None:
        """Too little free space on the data dir's disk (embedded), else None."""
        settings = self.runtime.settings
        if settings.mode != "embedded" or settings.min_free_disk_mb <= 0:
            return None
        free = self.free_space(settings.data_dir)
        if free < settings.min_free_disk_mb * MB:
            return (f"{free // MB} MB free on the disk of {settings.data_dir}, below "
                    f"min_free_disk_mb {settings.min_free_disk_mb}")
        return None


def readiness_of(request: Request) -> Readiness:
    """The app's Readiness (created on first use; tests may replace it)."""
    return _readiness(request.app)


def _readiness(app: Any) -> Readiness:
    state = app.state
    ready = getattr(state, "readiness", None)
    if ready is None or ready.runtime is not state.runtime:
        ready = state.readiness = Readiness(state.runtime)
    return ready


def refuse_when_disk_low(app: Any) -> None:
    """Intake guard: below ``min_free_disk_mb`` events are refused with 507 (never
    acknowledged, so the sender keeps them) instead of filling the disk under SQLite,
    whose shared-memory file then dies of SIGBUS."""
    problem = _readiness(app).disk_problem()
    if problem is not None:
        raise ApiError(507, "insufficient_storage",
                       f"{problem}: events are not accepted until space is freed")


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    """200 when every check passes, else 503 with the failed checks named."""
    report = await run_in_threadpool(readiness_of(request).report)
    return JSONResponse(report, status_code=200 if report["status"] == "ready" else 503)


@router.get("/v1/identity")
async def identity(request: Request) -> dict[str, Any]:
    """Who answers here: the data dir owner's instance id (no store is touched), and with
    a key, the key's tenant and role (what a client defaults ``--user`` to)."""
    runtime = request.app.state.runtime
    answer: dict[str, Any] = {**data_dir.identity(runtime.settings.data_dir),
                              "pid": os.getpid(), "mode": runtime.settings.mode}
    principal = principal_of(request)
    if principal is not None:
        answer["key"] = {"tenant": principal.tenant, "role": principal.role}
    return answer


@router.get("/healthz")
async def healthz(request: Request) -> JSONResponse:
    report = await run_in_threadpool(health, request.app.state.runtime)
    return JSONResponse(report, status_code=200 if report["status"] == "ok" else 503)


def health(runtime: Runtime) -> dict[str, Any]:
    """``GET /healthz``: each component checked for real."""
    checks = {
        "metadata": lambda: runtime.raw.count_events(),
        "vectors": lambda: runtime.index.count(exact=False),  # answers; no scan
        "embedder": lambda: runtime.embedder.dim,
    }
    components: dict[str, Any] = {}
    for name, check in checks.items():
        try:
            check()
            components[name] = "ok"
        except Exception as exc:  # health must report, not raise
            components[name] = f"error: {exc}"
    status = "ok" if all(v == "ok" for v in components.values()) else "degraded"
    return {"status": status, "mode": runtime.settings.mode, "components": components,
            **data_dir.identity(runtime.settings.data_dir)}  # which data dir answers here

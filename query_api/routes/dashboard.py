"""The live dashboard: ``GET /dashboard`` (static page) fed by ``GET /v1/dashboard/stream`` (SSE).

Each SSE message is one JSON snapshot (:meth:`query_api.telemetry.Telemetry.snapshot`):
``at``, ``stats`` (the ``/v1/stats`` body), ``rates``, ``history``, ``recalls``,
``stats_errors``. An admin key (or a service without keys) sees every tenant's recalls;
any other key sees only its own tenant's (then ``scope`` names it). A failed stats read is
sent as ``event: error`` and the stream goes on.
A stream ends after ``STREAM_MAX_SECONDS`` (the browser's EventSource reconnects after
``RETRY_MS``), and at once when the server stops (issue 47): uvicorn waits for open
responses on shutdown, so ``serve`` calls :func:`close_streams` first (``cli.py``,
``ClosingServer``) and every open stream ends within one loop turn, not after uvicorn's
graceful timeout with a cancelled task's traceback. Everything is served locally (no CDN).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, StreamingResponse

from breadcrumb.query_api.auth import Principal, principal_of
from breadcrumb.query_api.errors import ApiError
from breadcrumb.query_api.telemetry import Telemetry, telemetry_of

log = logging.getLogger(__name__)
router = APIRouter()

STATIC = Path(__file__).resolve().parent.parent / "static"  # query_api/static
ASSETS = {"dashboard.css": "text/css", "views.css": "text/css", "favicon.svg": "image/svg+xml",
          **{f"{name}.js": "text/javascript" for name in (
              "api", "dashboard", "source", "forget", "memories", "memory", "thread", "inspect",
              "dead", "fact")}}
STREAM_MAX_SECONDS = 15.0
RETRY_MS = 1000
NO_CACHE = {"Cache-Control": "no-cache"}


@router.get("/dashboard", include_in_schema=False)
async def dashboard_page() -> FileResponse:
    """The dashboard HTML page."""
    return FileResponse(STATIC / "dashboard.html", media_type="text/html", headers=NO_CACHE)


@router.get("/dashboard/assets/{name}", include_in_schema=False)
async def dashboard_asset(name: str) -> FileResponse:
    """The page's script, style sheet and icon (a fixed list: no path is built from input)."""
    if name not in ASSETS:
        raise ApiError(404, "not_found", f"no dashboard asset {name!r}")
    return FileResponse(STATIC / name, media_type=ASSETS[name], headers=NO_CACHE)


@router.get("/v1/dashboard/snapshot")
async def dashboard_snapshot(request: Request) -> dict[str, Any]:
    """One snapshot as JSON (the same body as one SSE message)."""
    telemetry = telemetry_of(request.app)
    try:
        return scoped(await run_in_threadpool(telemetry.snapshot), principal_of(request))
    except Exception as exc:  # shown to the caller as a 503, logged with its cause
        log.warning("dashboard: reading stats failed: %s", exc)
        raise ApiError(503, "stats_unavailable", f"reading stats failed: {exc}") from exc


@router.get("/v1/dashboard/stream")
async def dashboard_stream(
    request: Request,
    interval: float | None = Query(None, ge=0.2, le=60, description="seconds between messages"),
    limit: int | None = Query(None, ge=1, le=100_000, description="stop after this many"),
) -> StreamingResponse:
    """Server-sent events: one JSON snapshot every ``interval`` seconds (default ~1 s)."""
    runtime = request.app.state.runtime
    period = interval or float(getattr(runtime.settings, "dashboard_interval_seconds", 1.0))
    frames = sse_frames(telemetry_of(request.app), period, limit,
                        principal=principal_of(request), stop=closing(request.app))
    return StreamingResponse(frames, media_type="text/event-stream",
                             headers={**NO_CACHE, "X-Accel-Buffering": "no"})


def closing(app: Any) -> asyncio.Event:
    """Set when the server stops: every open stream of ``app`` ends (made on first use,
    in the server's event loop)."""
    try:
        event: asyncio.Event = app.state.dashboard_closing
    except AttributeError:
        event = app.state.dashboard_closing = asyncio.Event()
    return event


def close_streams(app: Any) -> None:
    """End every open dashboard stream of ``app`` now (the server is stopping)."""
    closing(app).set()


async def sse_frames(
    telemetry: Telemetry, interval: float, limit: int | None,
    max_seconds: float = STREAM_MAX_SECONDS, principal: Principal | None = None,
    stop: asyncio.Event | None = None,
) -> AsyncIterator[str]:
    """``retry:`` then snapshot frames until ``limit``, ``max_seconds`` or ``stop``."""
    yield f"retry: {RETRY_MS}\n\n"
    started = time.monotonic()
    sent = 0
    stop = stop or asyncio.Event()
    while not stop.is_set():
        yield await _frame(telemetry, principal)
        sent += 1
        if (limit is not None and sent >= limit) or time.monotonic() - started > max_seconds:
            return
        try:  # the pause between frames, cut short when the server stops
            await asyncio.wait_for(stop.wait(), timeout=interval)
        except TimeoutError:
            pass


async def _frame(telemetry: Telemetry, principal: Principal | None = None) -> str:
    try:
        snapshot = await run_in_threadpool(telemetry.snapshot)
    except Exception as exc:  # the page shows it; counted in telemetry.stats_errors
        log.warning("dashboard: reading stats failed: %s", exc)
        error = {"error": str(exc), "stats_errors": telemetry.stats_errors}
        return f"event: error\ndata: {orjson.dumps(error).decode()}\n\n"
    return f"data: {orjson.dumps(scoped(snapshot, principal)).decode()}\n\n"


def scoped(snapshot: dict[str, Any], principal: Principal | None) -> dict[str, Any]:
    """The snapshot as this caller may see it: a non-admin key sees its own recalls only."""
    if principal is None or principal.is_admin:
        return snapshot  # every tenant: unchanged
    mine = [r for r in snapshot["recalls"]["recent"] if r.get("user_id") == principal.tenant]
    by_class: dict[str, int] = {}
    for record in mine:
        by_class[record["classification"]] = by_class.get(record["classification"], 0) + 1
    latencies = sorted(float(r["latency_ms"]) for r in mine)
    recalls = {"total": len(mine), "by_classification": by_class,
               "latency_ms": {"p50": _quantile(latencies, 0.5), "p95": _quantile(latencies, 0.95)},
               "recent": mine}
    return {**snapshot, "recalls": recalls, "scope": principal.tenant}


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(q * len(values)))], 2)

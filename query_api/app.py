"""The HTTP query service (contract: shared/contracts/API.md)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from breadcrumb.infra.data_dir import identity
from breadcrumb.query_api.auth import install_security
from breadcrumb.query_api.brief import brief_view
from breadcrumb.query_api.errors import ApiError, install_error_handlers
from breadcrumb.query_api.models import FlushRequest, RecallRequest, RecallSourceRequest
from breadcrumb.query_api.routes_health import refuse_when_disk_low
from breadcrumb.query_api.runtime import Runtime, stats
from breadcrumb.query_api.telemetry import telemetry_of

log = logging.getLogger(__name__)
MAX_BATCH = 10_000


def create_app(runtime: Runtime, manage_lifecycle: bool = True) -> FastAPI:
    """Build the FastAPI app around an already-built runtime."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if manage_lifecycle:
            runtime.start()
        try:
            yield
        finally:
            if manage_lifecycle:
                runtime.stop()

    app = FastAPI(title="Breadcrumb", version="0.1.0", lifespan=lifespan)
    app.state.runtime = runtime
    install_error_handlers(app)
    include_routers(app)
    install_security(app, runtime.settings)  # keys, tenants, roles; browser-borne refused

    @app.post("/v1/events", status_code=202)
    async def post_events(request: Request) -> JSONResponse:
        refuse_when_disk_low(request.app)  # 507 rather than an unsafe acknowledgement
        items = await _events_body(request)
        result = await run_in_threadpool(runtime.gateway.submit, items, "http")
        if result.rejected and not result.accepted and not result.duplicates:
            first = result.rejected[0]
            raise ApiError(
                422, "invalid_event", f"event {first['position']}: {first['error']}",
                rejected=result.rejected,
            )
        return JSONResponse(result.to_dict(), status_code=202)

    @app.post("/v1/flush", status_code=202)
    async def post_flush(req: FlushRequest, request: Request) -> dict[str, Any]:
        refuse_when_disk_low(request.app)
        await run_in_threadpool(runtime.gateway.request_flush, req.user_id, req.thread_id, "flush")
        return {"flushed": 1}

    @app.post("/v1/recall")
    async def post_recall(req: RecallRequest) -> dict[str, Any]:
        response: dict[str, Any] = await run_in_threadpool(runtime.recall.recall, req)
        telemetry_of(app).record_recall(response, req.user_id)
        if req.view == "brief":
            return brief_view(response, req.max_tokens, runtime.embedder.count_tokens)
        return response

    @app.post("/v1/recall_source")
    async def post_recall_source(req: RecallSourceRequest) -> dict[str, Any]:
        if req.source_end_index < req.source_start_index:
            raise ApiError(422, "invalid_range", "source_end_index is before source_start_index")
        return await run_in_threadpool(runtime.recall.recall_source, req)

    @app.get("/v1/threads/{thread_id}/events")
    async def get_thread_events(
        thread_id: str, user_id: str, start: int = 0, end: int | None = None
    ) -> list[dict[str, Any]]:
        last = end if end is not None else start + 999
        if last < start:
            raise ApiError(422, "invalid_range", "end is before start")
        events = await run_in_threadpool(runtime.raw.get_range, user_id, thread_id, start, last)
        return [e.to_dict() for e in events]

    # GET /v1/memories/{memory_id} moved to query_api/routes_memories.py (issue 5: history)

    @app.get("/v1/stats")
    async def get_stats() -> dict[str, Any]:
        return await run_in_threadpool(stats, runtime)

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        report = await run_in_threadpool(health, runtime)
        return JSONResponse(report, status_code=200 if report["status"] == "ok" else 503)

    return app


def include_routers(app: FastAPI) -> None:
    """Mount every ``query_api/routes_*.py`` module's ``router`` (an APIRouter).

    Route handlers reach the runtime through ``request.app.state.runtime``.
    """
    import importlib
    import pkgutil

    from breadcrumb import query_api

    for info in sorted(pkgutil.iter_modules(query_api.__path__), key=lambda m: m.name):
        if info.name.startswith("routes_"):
            module = importlib.import_module(f"breadcrumb.query_api.{info.name}")
            app.include_router(module.router)


async def _events_body(request: Request) -> list[Any]:
    try:
        body = await request.json()
    except ValueError as exc:
        raise ApiError(400, "invalid_json", f"body is not JSON: {exc}") from exc
    if not isinstance(body, dict) or not isinstance(body.get("events"), list):
        raise ApiError(400, "invalid_body", 'body must be {"events": [Event, ...]}')
    events: list[Any] = body["events"]
    if len(events) > MAX_BATCH:
        raise ApiError(413, "batch_too_large", f"at most {MAX_BATCH} events per request")
    return events


def health(runtime: Runtime) -> dict[str, Any]:
    """``GET /healthz``: each component checked for real."""
    checks = {
        "metadata": lambda: runtime.raw.count_events(),
        "vectors": lambda: runtime.index.count(),
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
            **identity(runtime.settings.data_dir)}  # which data dir owner answers here


__all__ = ["create_app", "health", "stats"]

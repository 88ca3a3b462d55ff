"""The HTTP query service (contract: docs/contract/API.md): the app, its middleware and
security, and the routes of ``query_api/routes/``, each module an ``APIRouter``."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from breadcrumb.query_api.auth import install_security
from breadcrumb.query_api.errors import install_error_handlers
from breadcrumb.query_api.input_guard import InputGuard
from breadcrumb.query_api.routes import (
    admin,
    browse,
    dashboard,
    dashboard_data,
    events,
    explore,
    forget,
    health,
    memories,
    metrics,
    optimize,
    recalls,
    threads,
)
from breadcrumb.query_api.runtime import Runtime

log = logging.getLogger(__name__)

#: every route module, mounted in this order (a path matches the first route that takes it)
ROUTES = (admin, browse, dashboard, dashboard_data, explore, forget, health, memories,
          metrics, optimize, events, recalls, threads)


def settle_heap() -> None:
    """Put what is alive once a server is built (modules, stores, caches so far) out of
    the cyclic collector's reach (``gc.freeze``; entry points call it before serving).
    Without it every full collection walks all of it again: a 60-75 ms stall of the
    recall being answered, about once per 400 source recalls at 100k memories
    (``bench.recall`` data). Later garbage is collected as before."""
    gc.collect()
    gc.freeze()


def create_app(runtime: Runtime, manage_lifecycle: bool = True) -> FastAPI:
    """Build the FastAPI app around an already-built runtime. Route handlers reach it
    through ``request.app.state.runtime``."""

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
    limits = runtime.settings
    app.add_middleware(InputGuard, limit_body_bytes=limits.limit_body_bytes,
                       limit_json_depth=limits.limit_json_depth)
    for module in ROUTES:
        app.include_router(module.router)
    install_security(app, runtime.settings)  # keys, tenants, roles; browser-borne refused
    return app


__all__ = ["ROUTES", "create_app", "settle_heap"]

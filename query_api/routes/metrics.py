"""``GET /v1/stats`` (counts, pending, memories by status and tier: docs/contract/API.md)
and ``GET /metrics``: Prometheus text exposition of the app's own ``CollectorRegistry``.

Pipeline figures come from the same stats as ``GET /v1/stats`` (read on scrape, at most
every 0.5 s); recall counters and the latency histogram come from
:meth:`query_api.telemetry.Telemetry.record_recall`. Names are listed in
:mod:`query_api.telemetry` (``breadcrumb_*``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from breadcrumb.query_api.runtime import stats
from breadcrumb.query_api.telemetry import telemetry_of

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """Prometheus text format; this app's registry only (never the global one)."""
    registry = telemetry_of(request.app).registry
    body = await run_in_threadpool(generate_latest, registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


@router.get("/v1/stats")
async def get_stats(request: Request) -> dict[str, Any]:
    return await run_in_threadpool(stats, request.app.state.runtime)

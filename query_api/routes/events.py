"""``POST /v1/events`` and ``POST /v1/flush``: the write side's intake (docs/contract/API.md).

Both refuse with 507 when the data dir's disk is low (:func:`~breadcrumb.query_api.routes.
health.refuse_when_disk_low`) rather than acknowledge an event they may not keep.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from breadcrumb.query_api.errors import ApiError
from breadcrumb.query_api.input_guard import parse_json_body, stashed_json, unset
from breadcrumb.query_api.models import EVENTS_BODY, FlushRequest
from breadcrumb.query_api.routes.health import refuse_when_disk_low

router = APIRouter()


@router.post("/v1/events", status_code=202, openapi_extra=EVENTS_BODY)
async def post_events(request: Request) -> JSONResponse:
    refuse_when_disk_low(request.app)  # 507 rather than an unsafe acknowledgement
    runtime = request.app.state.runtime
    limits = runtime.settings
    items = await events_body(request, limits.limit_batch_events, limits.limit_json_depth)
    result = await run_in_threadpool(runtime.gateway.submit, items, "http")
    if result.rejected and not result.accepted and not result.duplicates:
        first = result.rejected[0]
        raise ApiError(
            422, "invalid_event", f"event {first['position']}: {first['error']}",
            rejected=result.rejected,
        )
    return JSONResponse(result.to_dict(), status_code=202)


@router.post("/v1/flush", status_code=202)
async def post_flush(req: FlushRequest, request: Request) -> dict[str, Any]:
    refuse_when_disk_low(request.app)
    gateway = request.app.state.runtime.gateway
    await run_in_threadpool(gateway.request_flush, req.user_id, req.thread_id, "flush")
    return {"flushed": 1}


async def events_body(request: Request, max_events: int, max_depth: int) -> list[Any]:
    """The ``events`` list of a ``POST /v1/events`` body, within the batch limit."""
    body = stashed_json(request)
    if unset(body):  # not parsed by the guard (a non-JSON content type): same rules here
        body, refusal = parse_json_body(await request.body(), max_depth)
        if refusal is not None:
            raise ApiError(refusal.status_code, "invalid_request",
                           str(orjson.loads(refusal.body)["error"]["message"]))
    if not isinstance(body, dict) or not isinstance(body.get("events"), list):
        raise ApiError(400, "invalid_body", 'body must be {"events": [Event, ...]}')
    events: list[Any] = body["events"]
    if len(events) > max_events:
        raise ApiError(413, "batch_too_large",
                       f"field 'events': at most {max_events} events per request "
                       "(limit_batch_events)")
    return events

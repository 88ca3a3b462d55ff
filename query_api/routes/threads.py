"""A thread's raw events, paged (``GET /v1/threads/{thread_id}/events``), and its backlog
(``GET /v1/threads/{thread_id}/pending``, embedded mode); docs/contract/API.md."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from breadcrumb.processors.json_sanity import MAX_INDEX
from breadcrumb.query_api.errors import ApiError
from breadcrumb.query_api.runtime import Runtime
from breadcrumb.streams.gateway import PendingByThread

router = APIRouter()


@router.get("/v1/threads/{thread_id:path}/events")
async def get_thread_events(
    request: Request,
    response: Response,
    thread_id: str = Path(min_length=1, max_length=256,
                          description='may hold "/"; send it as is or as %2F'),
    user_id: str = Query(min_length=1, max_length=128),
    start: int = Query(0, ge=0, le=MAX_INDEX),
    end: int | None = Query(None, ge=0, le=MAX_INDEX),
    limit: int | None = Query(None, ge=1, le=MAX_INDEX,
                              description="page size (at most limit_page_events)"),
    paged: bool = Query(False, description='answer {"events", "has_more", "next_start"}'),
) -> Any:
    page = await run_in_threadpool(
        thread_page, request.app.state.runtime, user_id, thread_id, start, end, limit)
    response.headers["x-has-more"] = "true" if page["has_more"] else "false"
    if page["next_start"] is not None:
        response.headers["x-next-start"] = str(page["next_start"])
    return page if paged else page["events"]


@router.get("/v1/threads/{thread_id:path}/pending")
async def get_thread_pending(
    request: Request,
    thread_id: str = Path(min_length=1, max_length=256),
    user_id: str = Query(min_length=1, max_length=128),
) -> dict[str, Any]:
    """One thread's backlog (``breadcrumb import`` waits for its own threads only)."""
    gateway = request.app.state.runtime.gateway
    if not isinstance(gateway, PendingByThread):
        raise ApiError(404, "not_tracked", "this service does not count a thread's "
                       "backlog (cluster mode); wait on GET /v1/stats")
    counts = await run_in_threadpool(gateway.thread_pending, user_id, thread_id)
    return {"user_id": user_id, "thread_id": thread_id, **counts}


def thread_page(runtime: Runtime, user_id: str, thread_id: str, start: int, end: int | None,
                limit: int | None) -> dict[str, Any]:
    """One page of a thread's raw events: at most ``limit_page_events`` indices from
    ``start``; ``has_more`` when the thread has events after the page (up to ``end``)."""
    most = runtime.settings.limit_page_events
    if limit is not None and limit > most:
        raise ApiError(422, "invalid_request",
                       f"field 'limit': at most {most} (limit_page_events)")
    if end is not None and end < start:
        raise ApiError(422, "invalid_range", "field 'end': end is before start")
    size = limit or most
    last = min(start + size - 1, MAX_INDEX if end is None else end)
    events = runtime.raw.get_range(user_id, thread_id, start, last)
    stop = MAX_INDEX if end is None else end
    more = last < stop and bool(runtime.raw.get_range(user_id, thread_id, last + 1,
                                                      min(stop, last + size)))
    return {"events": [e.to_dict() for e in events], "has_more": more,
            "next_start": last + 1 if more else None}

"""Admin route (extension): build the vector index's search structures now.

``POST /v1/admin/optimize`` runs ``runtime.index.optimize()`` (Qdrant Edge: HNSW build,
segment merge, vacuum) and answers ``{"optimized": bool, "seconds": float,
"pending_points": int}``; ``409 optimize_running`` while one runs. The request waits for
the build; every other request is served meanwhile (Qdrant Edge builds a copy of the shard
in a child process and swaps it in: ``stores/vectors/edge/index_build.py``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from breadcrumb.query_api.errors import ApiError
from breadcrumb.stores.ports import Optimizable, WriteBacklog

router = APIRouter()
_running = threading.Lock()


def _optimize(index: Any) -> dict[str, Any]:
    if not _running.acquire(blocking=False):
        raise ApiError(409, "optimize_running", "an optimize is already running")
    try:
        started = time.perf_counter()
        optimized = bool(index.optimize())
        pending = index.pending_writes()[0] if isinstance(index, WriteBacklog) else 0
        return {"optimized": optimized, "seconds": round(time.perf_counter() - started, 3),
                "pending_points": pending}
    finally:
        _running.release()


@router.post("/v1/admin/optimize")
async def optimize_index(request: Request) -> dict[str, Any]:
    """Optimize the current vector index (blocking until done)."""
    index = request.app.state.runtime.index
    if not isinstance(index, Optimizable):
        raise ApiError(501, "not_supported", "this vector index has no optimize()")
    return await run_in_threadpool(_optimize, index)

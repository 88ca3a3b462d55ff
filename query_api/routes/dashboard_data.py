"""JSON the dashboard's views need beyond the public API (docs/dashboard.md).

* ``GET /v1/dashboard/whoami`` → ``{"keys", "tenant", "role", "default_tenant"}``: who the
  page is talking as (``keys`` false while the service runs without keys; then tenant and
  role are null and ``default_tenant`` is the service's ``user_id``, ``local``).
* ``GET /v1/dashboard/memories/{id}/lifecycle?user_id=`` → when the memory's tier (or
  status) changes next by the sweeper's rules if nothing touches it: ``tier_since``,
  ``touched_at`` (the later of tier change, creation and last use), ``ttl_seconds`` and
  ``next`` = ``{"action", "to", "at", "rule"}`` (``demote``, ``delete`` or ``archive``)
  or null (archived, or no lifecycle service).
* ``GET /v1/dashboard/threads/{thread_id}?user_id=`` → ``{"thread_id", "open_window",
  "windows"}``: the thread's open window (events not yet in a memory, or null) and the
  ranges its memories were cut from (``memory_id``, ``start_index``, ``end_index``,
  ``status``, ``tier``), oldest first, at most ``MAX_WINDOWS``; and (issue 47) its header:
  ``title`` (the first request), ``project_id``, ``agent_id``, ``event_count``,
  ``first_ts``, ``last_ts``. 404 when the tenant has nothing of the thread.

Every read is scoped to ``user_id`` (the key's tenant; an admin may name any).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.concurrency import run_in_threadpool

from breadcrumb.processors import lifecycle as lc
from breadcrumb.query_api.auth import principal_of
from breadcrumb.query_api.errors import ApiError
from breadcrumb.query_api.routes.browse import open_windows
from breadcrumb.stores.sql.browse import MemoryFilter

router = APIRouter()
MAX_WINDOWS = 1000
WINDOW_PAGE = 200


@router.get("/v1/dashboard/whoami")
async def whoami(request: Request) -> dict[str, Any]:
    """The caller's tenant and role (null while the service has no keys)."""
    principal = principal_of(request)
    if principal is None:  # issue 47: the page opens on the service's default tenant
        return {"keys": False, "tenant": None, "role": None,
                "default_tenant": request.app.state.runtime.settings.user_id}
    return {"keys": True, "tenant": principal.tenant, "role": principal.role,
            "default_tenant": principal.tenant}


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def next_change(life: lc.MemoryLife, cfg: lc.LifecycleConfig) -> dict[str, Any] | None:
    """The sweeper's next change of an untouched memory: archive, or demote / delete at the
    end of its tier's TTL (``processors.lifecycle``), whichever comes first."""
    if life.status == "archived":
        return None
    candidates: list[dict[str, Any]] = []
    if life.status == "superseded":
        at = _ts(life.tier_since) + cfg.archive_superseded_after
        candidates.append({"action": "archive", "to": "archived", "at": at,
                           "rule": "archive:superseded"})
    if cfg.archive_unused_after:
        at = _ts(life.last_used_at or life.tier_since) + cfg.archive_unused_after
        candidates.append({"action": "archive", "to": "archived", "at": at,
                           "rule": "archive:unused"})
    ttl = lc._ttl(life.tier, cfg)
    index = lc.TIERS.index(life.tier) if life.tier in lc.TIERS else 0
    target = lc.DELETE if index == 0 else lc.TIERS[index - 1]
    candidates.append({"action": "delete" if target == lc.DELETE else "demote", "to": target,
                       "at": lc._touched(life) + ttl, "rule": f"ttl_{life.tier}"})
    first = min(candidates, key=lambda c: c["at"])
    return {**first, "at": _iso(first["at"])}


def lifecycle_view(runtime: Any, user_id: str, memory_id: str) -> dict[str, Any]:
    """``GET /v1/dashboard/memories/{id}/lifecycle``."""
    if runtime.memories.get_memory_row(user_id, memory_id) is None:
        raise ApiError(404, "not_found", f"no memory {memory_id} for this user")
    service = runtime.lifecycle
    life = service.tables.lives.get_life(user_id, memory_id) if service is not None else None
    if service is None or life is None:
        return {"memory_id": memory_id, "enabled": False, "next": None}
    cfg = service.configs(life.project_id)
    touched = lc._touched(life)
    ttl: timedelta = lc._ttl(life.tier, cfg)
    return {"memory_id": memory_id, "enabled": bool(runtime.settings.lifecycle_enabled),
            "status": life.status, "tier": life.tier, "tier_since": life.tier_since,
            "touched_at": _iso(touched), "ttl_seconds": ttl.total_seconds(),
            "hit_count": life.hit_count, "next": next_change(life, cfg)}


@router.get("/v1/dashboard/memories/{memory_id}/lifecycle")
async def memory_lifecycle(memory_id: str, request: Request,
                           user_id: str = Query(min_length=1, max_length=128)) -> dict[str, Any]:
    """When this memory changes tier or status next if nothing touches it."""
    return await run_in_threadpool(lifecycle_view, request.app.state.runtime, user_id,
                                   memory_id)


def thread_view(runtime: Any, user_id: str, thread_id: str) -> dict[str, Any]:
    """``GET /v1/dashboard/threads/{id}``: the open window and the memories' ranges."""
    windows: list[dict[str, Any]] = []
    cursor: str | None = None
    flt = MemoryFilter(user_id, thread_id=thread_id)
    while len(windows) < MAX_WINDOWS:
        rows, cursor = runtime.browse.list_memories(flt, "time", WINDOW_PAGE, cursor)
        windows += [{"memory_id": r["id"], "start_index": int(r["source_start_index"]),
                     "end_index": int(r["source_end_index"]), "status": r["status"],
                     "tier": r["tier"], "summary": r["summary"]} for r in rows]
        if cursor is None:
            break
    windows.sort(key=lambda w: (w["start_index"], w["end_index"]))
    open_window = open_windows(runtime, user_id).get(thread_id)
    info = runtime.explore.thread_info(user_id, thread_id)
    if info is None and not windows and open_window is None:  # issue 47: say so
        raise ApiError(404, "not_found", f"no thread {thread_id} for this user")
    return {"thread_id": thread_id, "open_window": open_window,
            "windows": windows[:MAX_WINDOWS], **(info or {})}


@router.get("/v1/dashboard/threads/{thread_id:path}")
async def thread_windows(
    request: Request,
    thread_id: str = Path(min_length=1, max_length=256),
    user_id: str = Query(min_length=1, max_length=128),
) -> dict[str, Any]:
    """A thread's windows: the memories' source ranges and the open window."""
    return await run_in_threadpool(thread_view, request.app.state.runtime, user_id, thread_id)

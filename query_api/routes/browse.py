"""Browsing the memory (issue 26): list memories, a memory's versions, threads, dead
letters and their re-drive. Reads go through ``stores.sql.browse``; the tenant is the
key's (``query_api.auth``: a reader, or an admin naming any tenant).

* ``GET /v1/memories?user_id=&project=&thread=&status=&tier=&tag=&text=&sort=&limit=&cursor=``
  → ``{"memories": [Memory + usage], "next_cursor"}``; keyset pages, ``sort`` = time |
  importance | hits (highest first).
* ``GET /v1/memories/{id}/versions?user_id=`` → ``{"memory_id", "versions": [...],
  "facts": [...]}``: the supersession chain oldest first with dates, and per exact value
  the memory holds (a fact key) every value it had, when, and which is current.
* ``GET /v1/threads?user_id=&project=&limit=&after=`` → ``{"threads": [...], "next_after"}``:
  agent, project, event count, first / last time, memories, the open window.
* ``GET /v1/dead_letters?user_id=&limit=&before=`` → ``{"dead_letters": [...], "next_before"}``
  (reason, position, the payload as received; a non-admin key sees its tenant's only).
* ``POST /v1/dead_letters/{id}/redrive`` (admin) ``{"event"?: Event, "actor"?}``: send the
  payload as received (or the fixed ``event``) through intake again; a letter the
  processors gave up on is applied again from its log position.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from breadcrumb.query_api.auth import principal_of
from breadcrumb.query_api.errors import ApiError
from breadcrumb.query_api.runtime import Runtime
from breadcrumb.stores.ports import OpenWindowStates
from breadcrumb.stores.sql import browse as sql_browse
from breadcrumb.stores.sql.browse import CursorError, MemoryFilter
from breadcrumb.topics.records import split_thread_key

router = APIRouter()
MEMORY_STATUSES = ("active", "superseded", "archived", "conflicted")
MEMORY_TIERS = ("provisional", "confirmed", "active")
MAX_PAGE = 200


def memory_view(row: dict[str, Any]) -> dict[str, Any]:
    """A full ``agent_memories`` row in the contract's Memory shape (plus usage)."""
    out = {k: v for k, v in row.items()
           if k not in ("source_thread_id", "source_start_index", "source_end_index")}
    out["source_range"] = {"thread_id": row["source_thread_id"],
                           "start_index": int(row["source_start_index"]),
                           "end_index": int(row["source_end_index"])}
    return out


def _one_of(name: str, value: str | None, allowed: tuple[str, ...]) -> str | None:
    if value is not None and value not in allowed:
        raise ApiError(422, "invalid_request", f"field '{name}': one of {', '.join(allowed)}")
    return value


def list_view(runtime: Runtime, user_id: str, project: str | None = None,
              thread: str | None = None, status: str | None = None, tier: str | None = None,
              tag: str | None = None, text: str | None = None, sort: str = "time",
              limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
    """``GET /v1/memories`` (also the CLI's ``memory list``)."""
    flt = MemoryFilter(user_id, project, thread, _one_of("status", status, MEMORY_STATUSES),
                       _one_of("tier", tier, MEMORY_TIERS), tag, text)
    _one_of("sort", sort, tuple(sql_browse.SORTS))
    if not 1 <= limit <= MAX_PAGE:
        raise ApiError(422, "invalid_request", f"field 'limit': 1 to {MAX_PAGE}")
    try:
        rows, nxt = runtime.browse.list_memories(flt, sort, limit, cursor)
    except CursorError as exc:
        raise ApiError(422, "invalid_cursor", f"field 'cursor': {exc}") from exc
    return {"memories": [memory_view(r) for r in rows], "next_cursor": nxt}


@router.get("/v1/memories")
async def list_memories(
    request: Request,
    user_id: str = Query(min_length=1, max_length=128),
    project: str | None = Query(None, min_length=1, max_length=128),
    thread: str | None = Query(None, min_length=1, max_length=256),
    status: str | None = None, tier: str | None = None,
    tag: str | None = Query(None, min_length=1, max_length=200),
    text: str | None = Query(None, min_length=1, max_length=200),
    sort: str = "time",
    limit: int = Query(50, ge=1, le=MAX_PAGE),
    cursor: str | None = Query(None, max_length=4000),
) -> Response:
    """A page of the tenant's memories, filtered and sorted."""
    page = await run_in_threadpool(list_view, request.app.state.runtime, user_id, project,
                                   thread, status, tier, tag, text, sort, limit, cursor)
    return json_bytes(page)


def json_bytes(content: dict[str, Any]) -> Response:
    """Plain JSON types encoded once by orjson (FastAPI's encoder walks every value)."""
    return Response(orjson.dumps(content), media_type="application/json")


def versions_view(runtime: Runtime, user_id: str, memory_id: str) -> dict[str, Any]:
    """``GET /v1/memories/{id}/versions`` (also the CLI's ``memory versions``)."""
    chain = runtime.browse.versions(user_id, memory_id)
    if not chain:
        raise ApiError(404, "not_found", f"no memory {memory_id} for this user")
    facts = runtime.browse.fact_versions(user_id, memory_id)
    return {"memory_id": memory_id, "versions": chain, "facts": facts}


@router.get("/v1/memories/{memory_id}/versions")
async def memory_versions(memory_id: str, request: Request,
                          user_id: str = Query(min_length=1, max_length=128)) -> dict[str, Any]:
    """The supersession chain through this memory, oldest first."""
    return await run_in_threadpool(versions_view, request.app.state.runtime, user_id,
                                   memory_id)


def threads_view(runtime: Runtime, user_id: str, project: str | None, limit: int,
                 after: str | None) -> dict[str, Any]:
    """``GET /v1/threads``: the stored threads plus their open windows."""
    threads, nxt = runtime.browse.list_threads(user_id, project, limit, after)
    counts = runtime.browse.thread_memory_counts(user_id, [t["thread_id"] for t in threads])
    windows = open_windows(runtime, user_id)
    for t in threads:
        t["memories"] = counts.get(t["thread_id"], 0)
        t["open_window"] = windows.get(t["thread_id"])
    return {"threads": threads, "next_after": nxt}


def open_windows(runtime: Runtime, user_id: str) -> dict[str, dict[str, Any]]:
    """Per thread with events not yet in a memory: how many, their first and last index."""
    out: dict[str, dict[str, Any]] = {}
    for source in [s.states for s in dict.fromkeys([runtime.derived_store(), runtime.log_store()])
                   if s is not None]:
        if not isinstance(source, OpenWindowStates):
            continue
        for key, state in source.list_open_states(user_id):
            owner, thread = split_thread_key(key)
            pending = state.get("pending") or []
            if owner != user_id or not pending:
                continue
            out[thread] = {"events": len(pending), "first_index": int(pending[0][0]),
                           "last_index": int(pending[-1][0]), "since": pending[0][4]}
    return out


@router.get("/v1/threads")
async def list_threads(
    request: Request,
    user_id: str = Query(min_length=1, max_length=128),
    project: str | None = Query(None, min_length=1, max_length=128),
    limit: int = Query(100, ge=1, le=500),
    after: str | None = Query(None, min_length=1, max_length=256),
) -> dict[str, Any]:
    """The tenant's threads in thread id order (keyset: ``after`` = ``next_after``)."""
    runtime = request.app.state.runtime
    return await run_in_threadpool(threads_view, runtime, user_id, project, limit, after)


def _letter_scope(request: Request, user_id: str | None) -> str | None:
    principal = principal_of(request)
    if principal is not None and not principal.is_admin:
        return principal.tenant  # a reader sees its own tenant's letters only
    return user_id


@router.get("/v1/dead_letters")
async def list_dead_letters(
    request: Request,
    user_id: str | None = Query(None, min_length=1, max_length=128),
    limit: int = Query(50, ge=1, le=500),
    before: int | None = Query(None, ge=1),
) -> dict[str, Any]:
    """Dead letters newest first: reason, position, the payload as received, re-drives."""
    from breadcrumb.query_api.redrive import letters_view

    scope = _letter_scope(request, user_id)
    runtime = request.app.state.runtime
    letters = await run_in_threadpool(letters_view, runtime, scope, limit, before)
    nxt = letters[-1]["id"] if len(letters) == limit else None
    return {"dead_letters": letters, "next_before": nxt}


class RedriveRequest(BaseModel):
    """``{"event"?: the fixed event, "actor"?: who re-drives}``."""

    model_config = ConfigDict(extra="forbid")

    event: dict[str, Any] | None = None
    actor: str = Field("api", min_length=1, max_length=64)


@router.post("/v1/dead_letters/{letter_id}/redrive")
async def redrive(letter_id: str, body: RedriveRequest, request: Request) -> dict[str, Any]:
    """Re-drive one dead letter after a fix (admin)."""
    from breadcrumb.query_api.redrive import redrive_letter

    principal = principal_of(request)
    actor = f"key:{principal.key_id}" if principal is not None else body.actor
    runtime = request.app.state.runtime
    return await run_in_threadpool(redrive_letter, runtime, letter_id, body.event, actor)


"""The explorer's reads (issue 47): which tenants there are, the threads by last event,
and the history of one fact across a tenant's memories.

* ``GET /v1/dashboard/tenants`` → ``{"tenants": [{"tenant", "events", "memories",
  "last_ts"}], "default", "all"}``: an admin key, or a service without keys (loopback
  only), gets every tenant the service holds (``all`` true) and ``default`` (the tenant
  the page opens on: the service's ``user_id``, ``local``, without keys); any other key
  its own tenant only.
* ``GET /v1/dashboard/threads?user_id=&limit=&before=`` → ``{"threads": [...],
  "next_before"}``: the tenant's threads, latest event first, each titled by its first
  request (``title``), with project, agent, events, memories and the open window.
* ``GET /v1/facts?user_id=&q=&limit=`` → ``{"facts": [{"key", "values", "last_ts",
  "current"}]}``: the tenant's fact keys (exact values such as ``env:DB_PORT``), those
  holding ``q`` when given, latest change first.
* ``GET /v1/facts/history?user_id=&key=`` → ``{"key", "current", "values": [...],
  "supersessions": [...]}``: every value the key took, oldest first: ``value``, ``ts``
  (when it was said), ``current``, the memory (``memory_id``, ``summary``, ``status``),
  the thread and the event that said it (``thread_id``, ``event_index``, ``source_range``);
  and each supersession ``{"from", "to", "from_value", "to_value", "at", "linked"}``
  (``linked``: the newer memory names the older as superseded). 404 for a key the tenant
  never held.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool

from breadcrumb.query_api.auth import principal_of
from breadcrumb.query_api.errors import ApiError
from breadcrumb.query_api.routes.browse import open_windows
from breadcrumb.query_api.runtime import Runtime

router = APIRouter()
#: At most this many events of a memory's range are read to find the one saying a value.
EVENT_SCAN = 500


@router.get("/v1/dashboard/tenants")
async def tenants(request: Request) -> dict[str, Any]:
    """The tenants the caller may pick from (an admin or no keys: every one)."""
    runtime = request.app.state.runtime
    principal = principal_of(request)
    if principal is not None and not principal.is_admin:
        return {"tenants": [{"tenant": principal.tenant}], "default": principal.tenant,
                "all": False}
    found = await run_in_threadpool(runtime.explore.list_tenants)
    default = runtime.settings.user_id if principal is None else principal.tenant
    return {"tenants": found, "default": default, "all": True}


def _cursor(before: str | None) -> tuple[str, str] | None:
    if before is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(before + "=" * (-len(before) % 4))
        last_ts, thread = json.loads(raw)
    except (ValueError, TypeError, binascii.Error):
        raise ApiError(422, "invalid_cursor", "field 'before': not a cursor this server "
                       "handed out") from None
    if not isinstance(last_ts, str) or not isinstance(thread, str):
        raise ApiError(422, "invalid_cursor", "field 'before': not a cursor this server "
                       "handed out")
    return last_ts, thread


def recent_threads(runtime: Runtime, user_id: str, limit: int,
                   before: str | None) -> dict[str, Any]:
    """``GET /v1/dashboard/threads``."""
    threads, nxt = runtime.explore.threads_by_last_event(user_id, limit, _cursor(before))
    counts = runtime.browse.thread_memory_counts(user_id, [t["thread_id"] for t in threads])
    windows = open_windows(runtime, user_id)
    for t in threads:
        t["memories"] = counts.get(t["thread_id"], 0)
        t["open_window"] = windows.get(t["thread_id"])
    cursor = None
    if nxt is not None:
        cursor = base64.urlsafe_b64encode(json.dumps(list(nxt)).encode()).decode().rstrip("=")
    return {"threads": threads, "next_before": cursor}


@router.get("/v1/dashboard/threads")
async def list_recent_threads(
    request: Request,
    user_id: str = Query(min_length=1, max_length=128),
    limit: int = Query(100, ge=1, le=500),
    before: str | None = Query(None, min_length=1, max_length=2000),
) -> dict[str, Any]:
    """The tenant's threads, latest event first, titled by their first request."""
    return await run_in_threadpool(recent_threads, request.app.state.runtime, user_id, limit,
                                   before)


@router.get("/v1/facts")
async def list_facts(
    request: Request,
    user_id: str = Query(min_length=1, max_length=128),
    q: str | None = Query(None, min_length=1, max_length=200),
    limit: int = Query(50, ge=1, le=500),
) -> dict[str, Any]:
    """The tenant's fact keys (holding ``q``), latest change first."""
    found = await run_in_threadpool(request.app.state.runtime.explore.fact_keys, user_id, q,
                                    limit)
    return {"facts": found}


def _said_at(runtime: Runtime, user_id: str, row: dict[str, Any]) -> int | None:
    """The index of the event of the memory's range that said the value: the one at the
    fact's time holding it, else the first holding it."""
    start, end = row["start_index"], min(row["end_index"], row["start_index"] + EVENT_SCAN - 1)
    events = runtime.raw.get_range(user_id, row["thread_id"], start, end)
    holding = [e for e in events if row["value"] in (e.content or "")]
    exact = [e for e in holding if e.ts == row["ts"]]
    picked = exact or holding
    return picked[0].index if picked else None


def fact_history(runtime: Runtime, user_id: str, key: str) -> dict[str, Any]:
    """``GET /v1/facts/history``."""
    rows = runtime.explore.fact_rows(user_id, key)
    if not rows:
        raise ApiError(404, "not_found", f"no fact {key!r} in tenant {user_id!r}")
    values = []
    for row in rows:
        values.append({
            "value": row["value"], "ts": row["ts"], "state": row["state"],
            "current": row["state"] == "current", "memory_id": row["memory_id"],
            "summary": row["summary"], "status": row["status"], "thread_id": row["thread_id"],
            "event_index": _said_at(runtime, user_id, row),
            "source_range": {"thread_id": row["thread_id"], "start_index": row["start_index"],
                             "end_index": row["end_index"]},
            "supersedes": row["supersedes"], "superseded_by": row["superseded_by"]})
    changes = [{"from": a["memory_id"], "to": b["memory_id"], "from_value": a["value"],
                "to_value": b["value"], "at": b["ts"],
                "linked": a["superseded_by"] == b["memory_id"] or
                b["supersedes"] == a["memory_id"]}
               for a, b in zip(values, values[1:], strict=False) if not a["current"]]
    current = next((v for v in reversed(values) if v["current"]), None)
    return {"key": key, "current": current, "values": values, "supersessions": changes}


@router.get("/v1/facts/history")
async def get_fact_history(
    request: Request,
    user_id: str = Query(min_length=1, max_length=128),
    key: str = Query(min_length=1, max_length=500),
) -> dict[str, Any]:
    """Every value a fact key took, when, where, which is current, the supersessions."""
    return await run_in_threadpool(fact_history, request.app.state.runtime, user_id, key)

"""Memory read + manual lifecycle control (issue 5; contract: docs/contract/API.md).

``GET /v1/memories/{id}?user_id=`` → Memory with ``history``; ``PATCH /v1/memories/{id}``
changes status and/or tier by hand (an audit entry + a changelog record);
``GET /v1/memories/{id}/audit?user_id=`` lists every change.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from breadcrumb.query_api.errors import ApiError

router = APIRouter()


class MemoryPatch(BaseModel):
    """Contract: ``{"user_id", "status"?, "tier"?, "reason", "actor"}``."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=128)
    status: str | None = None
    tier: str | None = None
    reason: str = Field(min_length=1, max_length=2000)
    actor: str = Field("api", min_length=1, max_length=64)


def memory_with_history(runtime: Any, user_id: str, memory_id: str) -> dict[str, Any]:
    """The Memory (contract shape) plus ``superseded_by``, usage and ``history``."""
    row = runtime.memories.get_memory_row(user_id, memory_id)
    memory = runtime.memories.get_memory(user_id, memory_id)
    if row is None or memory is None:
        raise ApiError(404, "not_found", f"no memory {memory_id} for this user")
    data: dict[str, Any] = memory.to_dict()
    data.update({k: row[k] for k in ("superseded_by", "hit_count", "last_used_at",
                                     "updated_at")})
    lifecycle = runtime.lifecycle
    data["history"] = lifecycle.history(user_id, memory_id) if lifecycle else []
    return data


def audit_view(runtime: Any, user_id: str, memory_id: str) -> list[dict[str, Any]]:
    """Audit rows as ``{"at", "actor", "field", "from", "to", "reason"}``, oldest first."""
    rows = runtime.audit.list_audit(user_id, memory_id)
    return [{"at": r["at"], "actor": r["actor"], "field": r["field"], "from": r["from_value"],
             "to": r["to_value"], "reason": r["reason"]} for r in rows]


def patch_memory(runtime: Any, memory_id: str, body: MemoryPatch) -> dict[str, Any]:
    """Apply a manual change through the LifecycleService."""
    if runtime.lifecycle is None:
        raise ApiError(503, "lifecycle_unavailable", "the lifecycle service is not configured")
    if body.status is None and body.tier is None:
        raise ApiError(422, "nothing_to_change", "give status and/or tier")
    try:
        found = runtime.lifecycle.set_manual(body.user_id, memory_id, body.actor, body.reason,
                                             status=body.status, tier=body.tier)
    except ValueError as exc:
        raise ApiError(422, "invalid_value", str(exc)) from exc
    if found is None:
        raise ApiError(404, "not_found", f"no memory {memory_id} for this user")
    return memory_with_history(runtime, body.user_id, memory_id)


@router.get("/v1/memories/{memory_id}")
async def get_memory(memory_id: str, user_id: str, request: Request) -> dict[str, Any]:
    """Memory with ``history``."""
    runtime = request.app.state.runtime
    return await run_in_threadpool(memory_with_history, runtime, user_id, memory_id)


@router.patch("/v1/memories/{memory_id}")
async def patch(memory_id: str, body: MemoryPatch, request: Request) -> dict[str, Any]:
    """Change status / tier by hand; writes an audit entry."""
    return await run_in_threadpool(patch_memory, request.app.state.runtime, memory_id, body)


@router.get("/v1/memories/{memory_id}/audit")
async def get_audit(memory_id: str, user_id: str, request: Request) -> list[dict[str, Any]]:
    """Every change of the memory: when, who or which rule, from, to, why."""
    runtime = request.app.state.runtime
    if runtime.memories.get_memory_row(user_id, memory_id) is None and not \
            runtime.audit.list_audit(user_id, memory_id):
        raise ApiError(404, "not_found", f"no memory {memory_id} for this user")
    return await run_in_threadpool(audit_view, runtime, user_id, memory_id)

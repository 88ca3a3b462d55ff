"""Admin routes (extension): replay the event log into a new generation while serving.

``POST /v1/admin/replay`` starts a replay (409 if one runs) through the runtime's
:class:`~breadcrumb.query_api.runtime.Generations`, the same calls in both modes
(embedded: a thread applying the event log; cluster: a Faust app of a new consumer group
reading ``agent-events`` from the earliest offset in this process's event loop).
``GET /v1/admin/replay`` reports its progress; ``GET /v1/admin/generations`` lists them;
``DELETE /v1/admin/generations/{name}`` removes an old one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from breadcrumb.query_api.errors import ApiError
from breadcrumb.query_api.runtime import Generations
from breadcrumb.streams.embedded.replay import Progress

router = APIRouter()
log = logging.getLogger(__name__)


class ReplayRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]{1,64}$")


class _ReplayJob:
    def __init__(self) -> None:
        self.task: asyncio.Task[None] | None = None
        self.progress: Any = None

    def running(self) -> bool:
        return self.task is not None and not self.task.done()


def _job(request: Request) -> _ReplayJob:
    state = request.app.state
    if not hasattr(state, "replay_job"):
        state.replay_job = _ReplayJob()
    job: _ReplayJob = state.replay_job
    return job


def _generations(request: Request) -> Generations:
    gens: Generations | None = request.app.state.runtime.generation_manager
    if gens is None:
        raise ApiError(501, "no_generations", "this runtime does not manage generations")
    return gens


@router.post("/v1/admin/replay", status_code=202)
async def start_replay(body: ReplayRequest, request: Request) -> dict[str, Any]:
    gens = _generations(request)
    job = _job(request)
    if job.running():
        raise ApiError(409, "replay_running", "a replay is already running")
    names = await run_in_threadpool(gens.names)
    if body.name and body.name in names:
        raise ApiError(409, "generation_exists", f"generation {body.name!r} already exists")
    job.progress = Progress(body.name or "pending", state="starting")

    def track(p: Progress) -> None:
        job.progress = p

    async def run() -> None:
        try:
            job.progress = await gens.replay(body.name, track)
        except BaseException as exc:  # cancelled too: the state must not stay "running"
            job.progress.state, job.progress.error = "failed", repr(exc)
            log.exception("replay failed")
            if not isinstance(exc, Exception):
                raise

    job.task = asyncio.create_task(run())
    return {"started": True}


@router.get("/v1/admin/replay")
async def replay_status(request: Request) -> dict[str, Any]:
    job = _job(request)
    if job.progress is None:
        return {"state": "idle"}
    data: dict[str, Any] = job.progress.to_dict()
    return data


@router.get("/v1/admin/generations")
async def generations(request: Request) -> dict[str, Any]:
    return await run_in_threadpool(_generations(request).describe)


@router.delete("/v1/admin/generations/{name}")
async def remove_generation(name: str, request: Request) -> dict[str, Any]:
    """Delete an old (not current) generation: its tables and vectors."""
    gens = _generations(request)
    if _job(request).running():
        raise ApiError(409, "replay_running", "a replay is running")
    if name not in await run_in_threadpool(gens.names):
        raise ApiError(404, "generation_not_found", f"no generation {name!r}")
    try:
        await run_in_threadpool(gens.remove, name)
    except ValueError as exc:
        raise ApiError(409, "generation_in_use", str(exc)) from exc
    return {"removed": name}

"""Admin routes (extension): replay the event log into a new generation while serving.

``POST /v1/admin/replay`` starts a replay in a background thread (409 if one runs);
``GET /v1/admin/replay`` reports its progress; ``GET /v1/admin/generations`` lists them.
Embedded mode only (cluster mode replays with a new worker group: see the README).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from query_api.errors import ApiError

router = APIRouter()
log = logging.getLogger(__name__)


class ReplayRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]{1,64}$")


class _ReplayJob:
    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.progress: Any = None

    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()


def _job(request: Request) -> _ReplayJob:
    state = request.app.state
    if not hasattr(state, "replay_job"):
        state.replay_job = _ReplayJob()
    job: _ReplayJob = state.replay_job
    return job


def _require_embedded(runtime: Any) -> None:
    if runtime.settings.mode != "embedded":
        raise ApiError(409, "not_embedded", "replay over HTTP is for the embedded default; "
                       "in cluster mode run `breadcrumb replay` (see the README)")


@router.post("/v1/admin/replay", status_code=202)
async def start_replay(body: ReplayRequest, request: Request) -> dict[str, Any]:
    from infra.embedded import replay
    from streams.replay import Progress

    runtime = request.app.state.runtime
    _require_embedded(runtime)
    job = _job(request)
    if job.running():
        raise ApiError(409, "replay_running", "a replay is already running")
    from stores.generations import GenerationCatalog

    if body.name and body.name in GenerationCatalog(runtime.settings.data_dir).names():
        raise ApiError(409, "generation_exists", f"generation {body.name!r} already exists")
    job.progress = Progress(body.name or "pending", state="starting")

    def run() -> None:
        def track(p: Progress) -> None:
            job.progress = p
        try:
            job.progress = replay(runtime, body.name, track)
        except Exception as exc:  # reported through GET /v1/admin/replay, and logged
            job.progress.state, job.progress.error = "failed", repr(exc)
            log.exception("replay failed")

    job.thread = threading.Thread(target=run, name="breadcrumb-replay", daemon=True)
    job.thread.start()
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
    from stores.generations import GenerationCatalog

    runtime = request.app.state.runtime
    _require_embedded(runtime)
    return GenerationCatalog(runtime.settings.data_dir).describe()

"""``POST /v1/forget`` (issue 26): erase a memory, a thread or a whole tenant.

Body ``{"user_id"?, "memory_id"?, "thread_id"?, "tenant"?: true, "actor"?}``: exactly one
of ``memory_id``, ``thread_id`` and ``tenant``. An admin key, or the tenant's own agent
key for its own data; a reader key is refused (``query_api.auth``).

Order of work, so nothing comes back halfway: the tombstone is written first (intake
refuses the scope from then on), then with the embedded processor held between entries
every SQL store loses the scope's rows (``stores.sql.forget.erasure``: raw events, log entries,
memories, chunks, facts, audit, thread state, dead letters), the vector points go
(tenant / thread / memory filter on both collections), the cold archives go, and the
in-process caches that could still hold a forgotten text are emptied. The erasure audit
keeps who, when, which kind and how many rows. ``GET /v1/erasures`` lists those rows.
In cluster mode the Kafka log is then rewritten without the erased events
(``streams.kafka.log_rewrite``; the response's ``log_rewrite`` says what it did).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
import time
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from breadcrumb.processors.text_cache import TextCache
from breadcrumb.query_api.auth import principal_of
from breadcrumb.query_api.errors import ApiError
from breadcrumb.query_api.runtime import Runtime
from breadcrumb.stores.clock import utc_now_iso
from breadcrumb.stores.cold.storage import escape_key_part
from breadcrumb.stores.ports import ColdStore, ErasesPoints, ForgetsCached
from breadcrumb.stores.ports.tables import Plan, Scope, Store
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.forget import tombstones
from breadcrumb.streams.kafka.log_rewrite import rewrite_log

log = logging.getLogger(__name__)
router = APIRouter()


class ForgetRequest(BaseModel):
    """Exactly one of ``memory_id``, ``thread_id`` and ``tenant``."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=128)
    memory_id: str | None = Field(None, min_length=1, max_length=400)
    thread_id: str | None = Field(None, min_length=1, max_length=256)
    tenant: bool = False
    actor: str = Field("api", min_length=1, max_length=64)

    def scope(self) -> Scope:
        named = [self.memory_id is not None, self.thread_id is not None, self.tenant]
        if sum(named) != 1:
            raise ApiError(422, "invalid_request",
                           "give exactly one of memory_id, thread_id, tenant=true")
        kind = "memory" if self.memory_id else "thread" if self.thread_id else "tenant"
        return Scope(kind, self.user_id, self.thread_id, self.memory_id)


def _stores(runtime: Runtime) -> list[Store]:
    """Every SQL store of this runtime (the log store, the current generation's)."""
    return [s for s in dict.fromkeys([runtime.log_store(), runtime.derived_store()])
            if s is not None]


def _generation_store(runtime: Runtime) -> Store:
    """The current generation's SQL store (where a scope is planned)."""
    store = runtime.derived_store()
    if store is None:
        raise ApiError(503, "unavailable", "this service has no SQL store to erase from")
    return store


def _held(runtime: Runtime) -> AbstractContextManager[Any]:
    runner = runtime.runner()
    return runner.paused() if runner is not None else nullcontext()


def forget_scope(runtime: Runtime, scope: Scope, actor: str) -> dict[str, Any]:
    """Erase ``scope`` everywhere this runtime stores it; the erasure's summary."""
    stores = _stores(runtime)
    with _held(runtime):
        _restart_schedule(runtime)  # two speeds: deferred passages are written first
        p = _generation_store(runtime).erasure.plan(scope)
        if p is None:
            raise ApiError(404, "not_found", f"no memory {scope.memory_id} for this user")
        _add_range_events(runtime, p)
        at = utc_now_iso()
        for store in stores:  # intake and the processors refuse it from now on
            store.tombstones.write(p, at, actor)
        counts: dict[str, int] = {}
        for store in stores:
            for table, n in store.erasure.erase(p).items():
                counts[table] = counts.get(table, 0) + n
        _erase_vectors(runtime, p)
        counts["cold_objects"] = _erase_cold(runtime, p)
        _empty_caches(runtime, stores)
        _restart_schedule(runtime)
    if runtime.runner() is None:
        _settle(runtime, stores, p)
    stores[0].erasure.write_audit(scope, at, actor, counts)
    out = {"erased": scope.kind, "user_id": scope.user_id, "at": at, "actor": actor,
           "counts": counts}
    if runtime.settings.mode == "cluster":
        out["log_rewrite"] = _rewrite_log(runtime, stores[0])
    return out


def _rewrite_log(runtime: Runtime, store: Store) -> dict[str, Any]:
    """Cluster: the erased bytes leave ``agent-events``, its DLQ and ``observations`` (in
    place, ``streams.kafka.log_rewrite``). The erasure itself is done and audited; a rewrite
    that fails is reported (``error``) and is run again with ``breadcrumb log rewrite``."""
    try:
        return asyncio.run(rewrite_log(runtime.settings, store))
    except Exception as exc:  # Kafka down, live writes among the copies: say so, retry later
        log.warning("forget: the log rewrite failed (%s); run `breadcrumb log rewrite`", exc)
        return {"error": f"{type(exc).__name__}: {exc}", "retry": "breadcrumb log rewrite"}


def _settle(runtime: Runtime, stores: list[Store], p: Plan) -> None:
    """Cluster: workers are not held while we erase, and another process sees a new
    tombstone within ``TOMBSTONE_TTL_S``; an event of the scope they applied meanwhile is
    erased by a second pass once every worker must see the tombstone."""
    time.sleep(tombstones.TOMBSTONE_TTL_S + 0.5)
    again = _generation_store(runtime).erasure.plan(p.scope) if p.scope.kind != "memory" \
        else p
    if again is not None:
        for store in stores:
            store.erasure.erase(again)
        _erase_vectors(runtime, again)


def _add_range_events(runtime: Runtime, p: Plan) -> None:
    """A memory's range may be archived: its event ids come from the cold copy too."""
    if p.scope.kind != "memory" or p.thread_id is None:
        return
    events = runtime.raw.get_range(p.scope.user_id, p.thread_id, p.start, p.end)
    p.event_ids = list(dict.fromkeys([*p.event_ids, *(e.event_id for e in events)]))


def _erase_vectors(runtime: Runtime, p: Plan) -> None:
    u = p.scope.user_id
    indexes = {id(runtime.index): runtime.index}
    for gen in runtime.generations.values():
        if gen.index is not None:
            indexes[id(gen.index)] = gen.index
    for any_index in indexes.values():
        if not isinstance(any_index, ErasesPoints):
            raise TypeError(f"{type(any_index).__name__} cannot erase points (forget)")
        index = any_index
        if p.scope.kind == "tenant":
            index.delete_where(u)
        elif p.scope.kind == "thread":
            index.delete_where(u, thread_id=p.thread_id)
            index.delete_where(u, memory_ids=p.memory_ids)  # memories of other threads: none
        else:
            index.delete_where(u, memory_ids=p.memory_ids)


def _cold_store(runtime: Runtime) -> ColdStore | None:
    archiver = runtime.lifecycle.archiver if runtime.lifecycle is not None else None
    return archiver.cold if archiver is not None else None


def _erase_cold(runtime: Runtime, p: Plan) -> int:
    """Archived objects of the scope (the recorded ones and any left under its prefix)."""
    cold = _cold_store(runtime)
    if cold is None:
        return 0
    keys = set(p.cold_keys)
    keys |= {k.removesuffix(".jsonl.gz") + ".chunks.jsonl.gz" for k in p.cold_keys}
    user = escape_key_part(p.scope.user_id)
    if p.scope.kind == "tenant":
        keys |= set(cold.list_keys(f"archive/{user}/"))
    elif p.scope.kind == "thread" and p.thread_id:
        keys |= set(cold.list_keys(f"archive/{user}/{escape_key_part(p.thread_id)}/"))
    for key in sorted(keys):
        cold.delete_object(key)
    return len(keys)


def _empty_caches(runtime: Runtime, stores: list[Store]) -> None:
    """Kept rows and decoded texts in this process: the SQLite store's memories, chunks,
    events and thread states, the archive reader's objects, and every ``lru_cache`` of
    Breadcrumb's modules and of the recall service (they are keyed by texts), the
    ``text_cache`` ones too."""
    for keeper in dict.fromkeys([*stores, runtime.raw]):
        if isinstance(keeper, ForgetsCached):
            keeper.forget_cached()
    s._decoded.cache_clear()
    holders = [m for n, m in list(sys.modules.items()) if n.startswith("breadcrumb.")]
    for holder in [*holders, runtime.recall]:
        for value in list(vars(holder).values()):
            if isinstance(value, functools._lru_cache_wrapper | TextCache):
                value.cache_clear()


def _restart_schedule(runtime: Runtime) -> None:
    """The embedded runner read ahead of the log: it rescans it without the erased entries."""
    runner = runtime.runner()
    if runner is not None:
        runner.use_generation(runner.derived, runner.service)


@router.post("/v1/forget")
async def post_forget(body: ForgetRequest, request: Request) -> dict[str, Any]:
    """Erase a memory, a thread or the tenant (admin, or the tenant's own agent key)."""
    scope = body.scope()
    principal = principal_of(request)
    actor = f"key:{principal.key_id}" if principal is not None else body.actor
    runtime = request.app.state.runtime
    return await run_in_threadpool(forget_scope, runtime, scope, actor)


@router.get("/v1/erasures")
async def list_erasures(request: Request, user_id: str | None = Query(None, max_length=128)
                        ) -> dict[str, Any]:
    """The erasure audit (admin): who erased which kind of scope when, and row counts."""
    runtime = request.app.state.runtime
    log_store = _stores(runtime)[0]
    rows = await run_in_threadpool(log_store.erasure.list_audit, user_id)
    return {"erasures": rows}

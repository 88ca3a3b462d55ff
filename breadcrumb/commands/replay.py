"""``breadcrumb replay``: rebuild every derived store from the event log into a new generation.

Embedded: a new generation (SQLite tables + Qdrant Edge shards) from the SQLite event log.
Cluster: a new database + Qdrant collections filled by a new consumer group reading
``agent-events`` from the earliest offset. Then the alias switches atomically. Talks to
the running service (``--url``, or the ``breadcrumb serve`` of the data dir) when there is
one — it keeps answering queries during the replay — else works in-process.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from breadcrumb.clients.service import api_key_headers
from breadcrumb.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    from breadcrumb.commands.options import common_options

    p = sub.add_parser("replay", help="rebuild the derived stores from the event log")
    common_options(p)
    p.add_argument("--name", default=None, help="name of the new generation")
    p.add_argument("--list", action="store_true", help="list generations and exit")
    p.add_argument("--remove", metavar="NAME", help="delete an old (not current) generation")
    p.set_defaults(handler=cmd_replay)


def _bar(p: dict[str, Any]) -> None:
    total = max(1, int(p["total"]))
    done = int(p["applied"])
    width = 30
    fill = int(width * min(done, total) / total)
    eta = p.get("eta_seconds")
    sys.stderr.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{total} entries "
                     f"{p.get('events_per_second', 0)}/s ETA {eta if eta is not None else '?'} s ")
    sys.stderr.flush()


def cmd_replay(args: argparse.Namespace, settings: Settings) -> int:
    from breadcrumb.clients.service import locate

    url, lock = locate(settings, args.url)  # the owning service, or the data dir locked here
    try:
        return _run(args, settings, url)
    finally:
        if lock is not None:
            lock.release()


def _run(args: argparse.Namespace, settings: Settings, url: str | None) -> int:
    if args.list:
        import json

        sys.stdout.write(json.dumps(_describe(settings, url), indent=1) + "\n")
        return 0
    if args.remove:
        _remove(settings, url, args.remove)
        sys.stdout.write(f"removed generation {args.remove}\n")
        return 0
    if url:
        final = _over_http(url, args.name)
    elif settings.mode == "cluster":
        final = _cluster_in_process(settings, args.name)
    else:
        final = _in_process(settings, args.name)
    sys.stderr.write("\n")
    sys.stdout.write(f"generation {final['generation']}: {final['state']}, "
                     f"{final['applied']} log entries, {final['events_per_second']} entries/s\n")
    return 0 if final["state"] == "done" else 1


def _describe(settings: Settings, url: str | None) -> dict[str, Any]:
    if url:
        import httpx

        data: dict[str, Any] = httpx.get(f"{url}/v1/admin/generations", timeout=30,
                                           headers=api_key_headers()).json()
        return data
    from breadcrumb.stores.generations.embedded import catalog_for

    described: dict[str, Any] = catalog_for(settings).describe()
    return described


def _remove(settings: Settings, url: str | None, name: str) -> None:
    if url:
        import httpx

        answer = httpx.delete(f"{url}/v1/admin/generations/{name}", timeout=120,
                              headers=api_key_headers())
        if answer.status_code >= 400:
            raise SystemExit(f"breadcrumb: {answer.json()['error']['message']}")
        return
    if settings.mode == "cluster":
        from breadcrumb.infra.bootstrap import build_embedder
        from breadcrumb.infra.cluster_generations import ClusterGenerations

        ClusterGenerations(settings, build_embedder(settings), None).remove(name)
        return
    from breadcrumb.stores.generations.embedded import GenerationCatalog

    GenerationCatalog(settings.data_dir).remove(name)


def _cluster_in_process(settings: Settings, name: str | None) -> dict[str, Any]:
    """Cluster mode without a reachable service: build and switch here, then stop.
    Workers follow the alias on their next start (they resume the new consumer group)."""
    import asyncio

    from breadcrumb.infra.bootstrap import build_embedder
    from breadcrumb.infra.cluster_generations import ClusterGenerations

    gens = ClusterGenerations(settings, build_embedder(settings), None)

    async def run() -> dict[str, Any]:
        progress = await gens.replay(name, lambda p: _bar(p.to_dict()), keep_running=False)
        return progress.to_dict()

    try:
        final = asyncio.run(run())
    finally:
        gens.close()
    sys.stderr.write(f"\nthe alias now names {final['generation']}: restart `breadcrumb worker` "
                     "processes to fill it (they resume its consumer group)\n")
    return final


def _in_process(settings: Settings, name: str | None) -> dict[str, Any]:
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.infra.embedded import replay

    runtime = build_runtime(settings)
    try:
        return replay(runtime, name, lambda p: _bar(p.to_dict())).to_dict()
    finally:
        runtime.stop()


def _over_http(url: str, name: str | None) -> dict[str, Any]:
    import httpx

    with httpx.Client(base_url=url, timeout=60, headers=api_key_headers()) as http:
        started = http.post("/v1/admin/replay", json={"name": name})
        if started.status_code >= 400:
            raise SystemExit(f"breadcrumb: {started.json()['error']['message']}")
        while True:
            status: dict[str, Any] = http.get("/v1/admin/replay").json()
            if status.get("total"):
                _bar(status)
            if status["state"] in ("done", "failed"):
                return status
            time.sleep(0.5)

"""``breadcrumb replay``: rebuild every derived store from the event log (embedded default).

Builds a new generation (SQLite tables + Qdrant Edge shards) from the log, then switches
the alias atomically. Talks to the running ``breadcrumb serve`` of the data dir when there
is one (it keeps answering queries during the replay), else works in-process.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from infra.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    from breadcrumb.cli import _common

    p = sub.add_parser("replay", help="rebuild the derived stores from the event log")
    _common(p)
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
    from breadcrumb.client import running_server
    from stores.generations import GenerationCatalog

    catalog = GenerationCatalog(settings.data_dir)
    if args.list:
        import json

        sys.stdout.write(json.dumps(catalog.describe(), indent=1) + "\n")
        return 0
    if args.remove:
        catalog.remove(args.remove)
        sys.stdout.write(f"removed generation {args.remove}\n")
        return 0
    url = args.url or running_server(settings)
    final = _over_http(url, args.name) if url else _in_process(settings, args.name)
    sys.stderr.write("\n")
    sys.stdout.write(f"generation {final['generation']}: {final['state']}, "
                     f"{final['applied']} log entries, {final['events_per_second']} entries/s\n")
    return 0 if final["state"] == "done" else 1


def _in_process(settings: Settings, name: str | None) -> dict[str, Any]:
    from infra.bootstrap import build_runtime
    from infra.embedded import replay

    runtime = build_runtime(settings)
    try:
        return replay(runtime, name, lambda p: _bar(p.to_dict())).to_dict()
    finally:
        runtime.stop()


def _over_http(url: str, name: str | None) -> dict[str, Any]:
    import httpx

    with httpx.Client(base_url=url, timeout=60) as http:
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

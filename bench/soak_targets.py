"""What the soak bench runs against: an embedded ``breadcrumb serve``, or the cluster's
``breadcrumb worker`` + ``breadcrumb serve`` on the running services.

Each target starts its processes, takes them down for the outage (embedded: the server
stops; cluster: the worker is killed with SIGKILL while ``serve`` keeps acknowledging onto
Kafka) and back up, and reads what the samples need straight from the process table and
the stores: RSS (``/proc``), disk (the data dir's allocated blocks; MariaDB's
``information_schema`` after ``ANALYZE TABLE``), the stored raw events (SQL, by event id)
and freshness (embedded: ``/v1/stats``, the server's ring buffer of recent entries;
cluster: the workers' histogram counters in SQL, differenced between two samples). The
retention pass runs the system's own lifecycle sweeper (``LifecycleService.sweep``) with
the clock moved forward, as the periodic sweeper would run it on those days.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.cluster_scale import _settle
from bench.freshness import start as start_serve
from bench.sweeper import _NoIndex
from breadcrumb.stores.clock import utc_now
from breadcrumb.streams.freshness import summary_from_counters

#: clock offsets of the retention pass: provisional TTL (7 d), archive of superseded (30 d)
SWEEP_DAYS = (8, 31, 38)
EVENT_TABLES = ("raw_events", "source_chunks", "agent_memories", "event_log")


def rss_bytes(pid: int | None, field: str = "VmRSS") -> int:
    """Resident set size of a live process (0 when it is gone); ``field="RssAnon"``: its
    anonymous part (heap), without file-backed mappings such as mmap'ed segments."""
    if pid is None:
        return 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def du(path: Path) -> int:
    """Bytes allocated to every file under ``path``."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def stop(proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM) -> None:
    """SIGTERM as the tests stop a worker (SIGKILL after 30 s), or SIGKILL at once."""
    from tests.integration.conftest import stop_worker

    if proc is None:
        return
    if sig == signal.SIGKILL:
        proc.kill()
        proc.wait(30)
    else:
        stop_worker(proc)


class Embedded:
    """``breadcrumb serve`` (embedded) on a throw-away data dir; outage = the server down."""

    mode = "embedded"

    def __init__(self, tmp: Path, embedder: str) -> None:
        self.data_dir, self.embedder = tmp / "data", embedder
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    @property
    def db(self) -> Path:
        return self.data_dir / "breadcrumb.sqlite3"

    def start(self) -> None:
        self.proc, self.url = start_serve(self.data_dir, self.embedder)

    def outage_begin(self) -> None:
        stop(self.proc)
        self.proc = None

    def outage_end(self) -> None:
        self.start()

    def pids(self) -> dict[str, int | None]:
        return {"serve": self.proc.pid if self.proc and self.proc.poll() is None else None}

    def disk(self) -> dict[str, int]:
        return {"data_dir": du(self.data_dir)}

    def _sql(self, query: str) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
        try:
            return conn.execute(query).fetchall()
        finally:
            conn.close()

    def stored(self) -> int:
        return int(self._sql("SELECT COUNT(*) FROM raw_events")[0][0]) if self.db.exists() else 0

    def stored_ids(self) -> Counter[tuple[str, str]]:
        return Counter((u, e) for u, e in self._sql("SELECT user_id, event_id FROM raw_events"))

    def snapshot(self) -> dict[str, int]:
        return {}

    def freshness(self, stats: dict[str, Any], since: dict[str, int] | None = None
                  ) -> dict[str, Any]:
        """The server's ring buffer of its most recent entries (``since`` is not needed)."""
        return dict((stats.get("freshness") or {}).get("recallable_ms") or {})

    def stop(self) -> None:
        stop(self.proc)
        self.proc = None

    def retention(self) -> dict[str, Any]:
        """The sweeper at +8 / +31 / +38 days on the stopped server's data dir; SQLite
        sizes before, after the sweeps + WAL checkpoint, and after a VACUUM."""
        from breadcrumb.infra.bootstrap import build_runtime
        from breadcrumb.settings import Settings

        before = self._sizes()
        settings = Settings(mode="embedded", data_dir=self.data_dir, embedder=self.embedder)
        runtime = build_runtime(settings)
        try:
            assert runtime.lifecycle is not None
            changes = _sweeps(runtime.lifecycle)
        finally:
            runtime.stop()
        conn = sqlite3.connect(self.db)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            swept = self._sizes(conn)
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            vacuumed = self._sizes(conn)
        finally:
            conn.close()
        return {"changes": changes, "before": before, "after_sweep": swept,
                "after_vacuum": vacuumed, "cold_bytes": du(self.data_dir / "cold")}

    def _sizes(self, conn: sqlite3.Connection | None = None) -> dict[str, int]:
        own = conn or sqlite3.connect(self.db)
        try:
            page = int(own.execute("PRAGMA page_size").fetchone()[0])
            free = int(own.execute("PRAGMA freelist_count").fetchone()[0])
            rows = {t: int(own.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
                    for t in EVENT_TABLES}
        finally:
            if conn is None:
                own.close()
        files = sum(p.stat().st_size for p in self.data_dir.glob("breadcrumb.sqlite3*"))
        return {"sqlite_bytes": files, "free_bytes": page * free, "data_dir": du(self.data_dir),
                **{f"rows_{t}": n for t, n in rows.items()}}

    def cleanup(self) -> None:
        self.stop()


class Cluster:
    """``breadcrumb worker`` + ``breadcrumb serve`` (cluster) on the running Kafka, MariaDB
    and S3, isolated by topic prefix, consumer group, database ``bc_test_soak_*`` and the
    users' S3 prefixes; outage = the worker killed (SIGKILL) and restarted later."""

    mode = "cluster"

    def __init__(self, tmp: Path, embedder: str) -> None:
        from tests.integration.conftest import free_port, fresh_database
        from tests.integration.processes import isolated_env

        self.tmp, self.embedder = tmp, embedder
        self.tag = f"soak_{uuid.uuid4().hex[:8]}"
        self.database = fresh_database(self.tag)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = isolated_env(
            self.tag.replace("_", "-"), self.database, self.port,
            BREADCRUMB_EMBEDDER=embedder, BREADCRUMB_IDLE_FLUSH_SECONDS="300",
            BREADCRUMB_S3_ENDPOINT="http://127.0.0.1:9000", BREADCRUMB_S3_ACCESS_KEY="breadcrumb",
            BREADCRUMB_S3_SECRET_KEY="breadcrumb-secret")
        self.worker: subprocess.Popen[bytes] | None = None
        self.serve: subprocess.Popen[bytes] | None = None
        self._counters: dict[str, int] = {}
        self.users: set[str] = set()

    def settings(self) -> Any:
        from breadcrumb.settings import Settings

        values = {k[len("BREADCRUMB_"):].lower(): v for k, v in self.env.items()
                  if k.startswith("BREADCRUMB_")}
        return Settings(data_dir=self.tmp / ".breadcrumb", **values)

    def _start(self, args: list[str], log: str) -> subprocess.Popen[bytes]:
        from tests.integration.processes import start

        return start(args, self.env, self.tmp, self.tmp / log)

    def start(self) -> None:
        from tests.integration.conftest import wait_api

        self.worker = self._start(["worker"], "worker.log")
        _settle([(self.worker, self.tmp / "worker.log")], quiet=3.0)
        self.serve = self._start(["serve"], "serve.log")
        wait_api(self.serve, self.tmp / "serve.log", self.url, timeout=240)

    def outage_begin(self) -> None:
        stop(self.worker, signal.SIGKILL)
        self.worker = None

    def outage_end(self) -> None:
        log = self.tmp / "worker.log"
        log.write_bytes(b"")  # _settle counts the new process's assignments only
        self.worker = self._start(["worker"], "worker.log")
        _settle([(self.worker, log)], quiet=3.0)

    def pids(self) -> dict[str, int | None]:
        return {name: p.pid if p and p.poll() is None else None
                for name, p in (("worker", self.worker), ("serve", self.serve))}

    def _sql(self, query: str) -> list[tuple[Any, ...]]:
        import pymysql

        conn = pymysql.connect(host="127.0.0.1", port=3306, user="breadcrumb",
                               password="breadcrumb", database=self.database, autocommit=True)
        try:
            with conn.cursor() as cur:
                cur.execute(query)
                return [tuple(v.decode() if isinstance(v, bytes | bytearray) else v for v in row)
                        for row in cur.fetchall()]
        finally:
            conn.close()

    def disk(self) -> dict[str, int]:
        self._sql(f"ANALYZE TABLE {', '.join(EVENT_TABLES)}")
        rows = self._sql("SELECT COALESCE(SUM(data_length + index_length), 0), "
                         "COALESCE(SUM(data_free), 0) FROM information_schema.tables "
                         f"WHERE table_schema = '{self.database}'")
        return {"sql": int(rows[0][0]), "sql_free": int(rows[0][1]),
                "data_dir": du(self.tmp / ".breadcrumb")}

    def stored(self) -> int:
        return int(self._sql("SELECT COUNT(*) FROM raw_events")[0][0])

    def stored_ids(self) -> Counter[tuple[str, str]]:
        return Counter((u, e) for u, e in self._sql("SELECT user_id, event_id FROM raw_events"))

    def snapshot(self) -> dict[str, int]:
        """The workers' freshness histogram counters now."""
        return {str(k): int(v) for k, v in
                self._sql("SELECT name, value FROM kv_counters WHERE name LIKE 'freshness_%'")}

    def freshness(self, stats: dict[str, Any], since: dict[str, int] | None = None
                  ) -> dict[str, Any]:
        """p50 / p95 of the events the workers applied since ``since`` (default: the
        previous sample)."""
        now = self.snapshot()
        base = self._counters if since is None else since
        delta = {k: v - base.get(k, 0) for k, v in now.items()}
        if since is None:
            self._counters = now
        return dict(summary_from_counters(delta)["recallable_ms"])

    def stop(self) -> None:
        stop(self.worker)
        stop(self.serve)
        self.worker = self.serve = None

    def retention(self) -> dict[str, Any]:
        """The worker's sweeper (archive to S3) at +8 / +31 / +38 days on the database
        (vector payloads are not touched: the no-op index of bench/sweeper.py); table
        sizes before, after, and after ``OPTIMIZE TABLE``."""
        from breadcrumb.infra.bootstrap import build_lifecycle
        from breadcrumb.infra.cluster import build_cold_store, build_sql_store
        from breadcrumb.streams.lifecycle.service import CollectingChangelog

        settings = self.settings()
        before = self._sizes()
        store = build_sql_store(settings)
        try:
            life, _raw = build_lifecycle(settings, store, _NoIndex(), build_cold_store(settings),
                                         CollectingChangelog())
            changes = _sweeps(life)
        finally:
            store.close()
        swept = self._sizes()
        self._sql(f"OPTIMIZE TABLE {', '.join(EVENT_TABLES)}")
        return {"changes": changes, "before": before, "after_sweep": swept,
                "after_vacuum": self._sizes(), "cold_bytes": self._s3_bytes()}

    def _sizes(self) -> dict[str, int]:
        disk = self.disk()
        rows = {t: int(self._sql(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in EVENT_TABLES}
        return {"sql_bytes": disk["sql"], "free_bytes": disk["sql_free"],
                **{f"rows_{t}": n for t, n in rows.items()}}

    def _s3_objects(self) -> Iterator[tuple[Any, str, int]]:
        import boto3

        s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:9000", region_name="us-east-1",
                          aws_access_key_id="breadcrumb", aws_secret_access_key="breadcrumb-secret")
        for user in sorted(self.users):
            pages = s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.settings().s3_bucket, Prefix=f"archive/{user}/")
            for page in pages:
                for obj in page.get("Contents", []):
                    yield s3, obj["Key"], int(obj["Size"])

    def _s3_bytes(self) -> int:
        return sum(size for _s3, _key, size in self._s3_objects())

    def cleanup(self) -> None:
        from breadcrumb.infra.topic_admin import TopicAdmin
        from breadcrumb.topics.names import topic_specs
        from tests.integration.conftest import drop_database

        self.stop()
        bucket = self.settings().s3_bucket
        for s3, key, _size in list(self._s3_objects()):
            s3.delete_object(Bucket=bucket, Key=key)
        drop_database(self.database)

        async def drop_topics() -> None:
            prefix = self.env["BREADCRUMB_TOPIC_PREFIX"]
            async with TopicAdmin("127.0.0.1:9092") as admin:
                await admin.delete(spec.name for spec in topic_specs(prefix))
        asyncio.run(drop_topics())


def _sweeps(life: Any) -> dict[str, dict[str, int]]:
    now = utc_now()
    return {f"+{d}d": dict(life.sweep(now + timedelta(days=d))) for d in SWEEP_DAYS}


def get_stats(url: str) -> dict[str, Any]:
    """``/v1/stats`` (empty while the service is down)."""
    try:
        answer = httpx.get(f"{url}/v1/stats", timeout=30)
        return dict(answer.json()) if answer.status_code == 200 else {}
    except httpx.HTTPError:
        return {}


def target(mode: str, tmp: Path, embedder: str) -> Embedded | Cluster:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    return Cluster(tmp, embedder) if mode == "cluster" else Embedded(tmp, embedder)

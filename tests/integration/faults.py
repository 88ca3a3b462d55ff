"""Helpers of the cluster fault suite: a fleet of events, worker processes, a private
MariaDB, publishing straight to Kafka (as the Kafka SDK does) and the after-drain report."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pymysql
from aiokafka import AIOKafkaProducer

from breadcrumb.settings import Settings
from breadcrumb.streams.tracking import DIRECT_HEADER
from breadcrumb.topics.kafka_security import started
from tests.conftest import example_events

REPO = Path(__file__).resolve().parents[2]
ENV_FIELDS = ("mode", "data_dir", "topic_prefix", "worker_id", "worker_web_port",
              "idle_flush_seconds", "mysql_database", "mysql_port", "port", "embedder",
              "kafka_bootstrap", "kafka_session_timeout_seconds", "kafka_heartbeat_seconds",
              "vector_store")


def fleet(copies: int) -> list[dict[str, Any]]:
    """``copies`` agents replaying the example session, each on threads of its own, in an
    order that interleaves the agents (each thread's events stay in order)."""
    base = example_events()
    out = []
    for event in base:
        for c in range(copies):
            out.append({**event, "user_id": ("demo", "ops")[c % 2],
                        "thread_id": f"{event['thread_id']}-{c}",
                        "event_id": f"{event['event_id']}-{c}", "agent_id": f"agent-{c}"})
    return out


def key_of(event: dict[str, Any]) -> bytes:
    return f"{event['user_id']}/{event['thread_id']}".encode()


def clean_ranges(tmp_path: Path, events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Memory ids and ranges of a clean embedded run of the same events."""
    from breadcrumb.infra.bootstrap import build_runtime

    runtime = build_runtime(Settings(data_dir=tmp_path / "clean", embedder="hash"))
    try:
        runtime.gateway.submit(events, "test")
        runtime.gateway.wait_processed(300)
        return ranges(runtime.derived_store())
    finally:
        runtime.stop()


def ranges(store: Any) -> list[tuple[Any, ...]]:
    rows = store.db.read("SELECT id, user_id, source_thread_id, source_start_index, "
                       "source_end_index FROM agent_memories")
    return sorted(tuple(_text(v) for v in row) for row in rows)


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes | bytearray) else value


def stall_after(store: Any, before: int, killed_at: float, timeout: float = 120) -> float:
    """Seconds from a worker kill (``time.monotonic()``) until a raw event beyond the
    ``before`` stored at the kill is stored again (agents keep publishing meanwhile)."""
    deadline = killed_at + timeout
    while store.events.count_events() <= before:
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing stored for {timeout} s after the kill")
        time.sleep(0.1)
    return time.monotonic() - killed_at


def assignments(log: Path, topic: str) -> list[tuple[datetime, str, bool]]:
    """From a worker's log: (time, partitions of ``topic`` assigned, e.g. ``{0-2}``, whether
    the worker then reported "Worker ready") per rebalance, oldest first."""
    out: list[tuple[datetime, str, bool]] = []
    at: datetime | None = None
    assigning = False  # inside the table after "Setting newly assigned partitions"
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("[") and len(line) > 24 and line[24] == "]":
            at = datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f").astimezone()
            assigning = "Setting newly assigned partitions" in line
        if assigning and line.startswith(f"| {topic} ") and at is not None:
            out.append((at, line.split("|")[2].strip(), False))
        elif "Worker ready" in line and out and at is not None:
            out[-1] = (at, out[-1][1], True)
    return out


def ready_with(log: Path, topic: str, partitions: str, since: datetime,
               timeout: float = 120) -> float:
    """Seconds from ``since`` until the worker writing ``log`` was ready holding
    ``partitions`` of ``topic`` (e.g. ``{0-2}``: all of them)."""
    deadline = time.monotonic() + timeout
    while True:
        for at, assigned, ready in assignments(log, topic):
            if ready and assigned == partitions and at > since:
                return (at - since).total_seconds()
        if time.monotonic() > deadline:
            raise AssertionError(f"{log.name}: not ready with {partitions} of {topic} "
                                 f"within {timeout} s")
        time.sleep(0.2)


def stored_ids(store: Any) -> list[tuple[str, str]]:
    rows = store.db.read("SELECT user_id, event_id FROM raw_events")
    return [(_text(u), _text(e)) for u, e in rows]


class Worker:
    """``breadcrumb worker`` as an operator runs it (BREADCRUMB_* variables)."""

    def __init__(self, settings: Settings, log: Path) -> None:
        self.settings = settings
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Worker:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
        for name in ENV_FIELDS:
            env[f"BREADCRUMB_{name.upper()}"] = str(getattr(self.settings, name))
        self.proc = subprocess.Popen([sys.executable, "-m", "breadcrumb.cli", "worker"],
                                     stdout=self.log.open("ab"), stderr=subprocess.STDOUT,
                                     env=env, cwd=self.log.parent)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


class PrivateMariaDb:
    """A MariaDB of our own (infra/mariadb.sh on another port and INFRA_DIR): the fault
    tests stop and start it; the shared one is never touched."""

    def __init__(self, infra_dir: Path, port: int) -> None:
        self.env = {**os.environ, "BREADCRUMB_INFRA_DIR": str(infra_dir),
                    "BREADCRUMB_MYSQL_PORT": str(port)}
        self.port = port

    def _script(self, action: str) -> None:
        subprocess.run(["bash", str(REPO / "infra" / "mariadb.sh"), action], env=self.env,
                       check=True, capture_output=True, timeout=120)

    def up(self) -> None:
        self._script("up")

    def down(self) -> None:
        self._script("down")

    def create_database(self, name: str) -> None:
        conn = pymysql.connect(host="127.0.0.1", port=self.port, user="breadcrumb",
                               password="breadcrumb")
        try:
            with conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        finally:
            conn.close()


class PrivateKafka:
    """A broker of our own (infra/kafka.sh on other ports and INFRA_DIR, the jars of the
    services' INFRA_DIR linked in: ``BREADCRUMB_INFRA_DIR``, else the repository's own
    ``.infra`` where ``make test`` started them): the fault tests restart it; the shared
    broker is never touched. Without those jars kafka.sh fetches its own."""

    def __init__(self, infra_dir: Path, port: int, controller_port: int) -> None:
        (infra_dir / "kafka").mkdir(parents=True, exist_ok=True)
        shared = Path(os.environ.get("BREADCRUMB_INFRA_DIR") or REPO / ".infra")
        if (shared / "kafka" / "libs").is_dir():
            (infra_dir / "kafka" / "libs").symlink_to(shared / "kafka" / "libs")
        self.env = {**os.environ, "BREADCRUMB_INFRA_DIR": str(infra_dir), "PYTHON": sys.executable,
                    "BREADCRUMB_KAFKA_PORT": str(port),
                    "BREADCRUMB_KAFKA_CONTROLLER_PORT": str(controller_port)}
        self.bootstrap = f"127.0.0.1:{port}"

    def _script(self, action: str) -> None:
        subprocess.run(["bash", str(REPO / "infra" / "kafka.sh"), action], env=self.env,
                       check=True, capture_output=True, timeout=240, cwd=REPO)

    def up(self) -> None:
        self._script("up")

    def down(self) -> None:
        self._script("down")


async def produce(settings: Settings, messages: list[tuple[bytes, bytes | None]],
                  pause: float | Callable[[int], float] = 0.0) -> int:
    """Publish keyed messages with acks=all and the SDK's header (counted as received by
    the worker); returns how many the broker acknowledged."""
    producer = await started(AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap,
                                              acks="all", enable_idempotence=True))
    acked = 0
    try:
        for key, value in messages:
            await producer.send_and_wait(settings.topic("agent-events"), value, key=key,
                                         headers=[(DIRECT_HEADER, b"1")])
            acked += 1
            wait = pause(acked) if callable(pause) else pause
            if wait:
                await asyncio.sleep(wait)
    finally:
        await producer.stop()
    return acked


def publish_events(settings: Settings, events: list[dict[str, Any]],
                   pause: float | Callable[[int], float] = 0.0) -> int:
    """Publish as agents do; ``pause``: seconds after each message (or after the n-th)."""
    return asyncio.run(produce(settings, [(key_of(e), orjson.dumps(e)) for e in events], pause))


@dataclass
class Report:
    """What one fault did, after the drain."""

    fault: str
    acknowledged: int
    stored: int
    lost: int
    duplicated: int
    dead_lettered: int
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"fault": self.fault, "acknowledged": self.acknowledged, "stored": self.stored,
                "lost": self.lost, "duplicated": self.duplicated,
                "dead_lettered": self.dead_lettered, **self.extra}

    def line(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in self.extra.items())
        return (f"FAULT {self.fault}: acknowledged={self.acknowledged} stored={self.stored} "
                f"lost={self.lost} duplicated={self.duplicated} "
                f"dead_lettered={self.dead_lettered} {extra}").strip()


def report(fault: str, events: list[dict[str, Any]], store: Any, out: Path | None = None,
           **extra: Any) -> Report:
    """The after-drain figures: printed (``pytest -s``) and appended as one JSON line to
    ``out`` (the tests use ``fault-figures.jsonl`` in pytest's base temp dir)."""
    ids = stored_ids(store)
    sent = {(e["user_id"], e["event_id"]) for e in events}
    result = Report(fault, len(events), len(ids), len(sent - set(ids)), len(ids) - len(set(ids)),
                    int(store.counters.get_counters().get("dead_lettered", 0)), extra)
    print(result.line())
    if out is not None:
        with out.open("ab") as f:
            f.write(orjson.dumps(result.to_dict()) + b"\n")
    return result

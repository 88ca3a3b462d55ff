"""Helpers to run a real Faust worker process against the services from infra/, and a
private MariaDB a fault test may stop (``private_db``)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from breadcrumb.settings import Settings
from tests.integration.faults import PrivateMariaDb


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _admin_sql(statement: str) -> None:
    """Run one statement as the breadcrumb user, outside any database."""
    import pymysql

    conn = pymysql.connect(host="127.0.0.1", port=int(os.environ.get("BREADCRUMB_MYSQL_PORT",
                           "3306")), user="breadcrumb", password="breadcrumb")
    try:
        with conn.cursor() as cur:
            cur.execute(statement)
    finally:
        conn.close()


def fresh_database(tag: str) -> str:
    """Create a throw-away database ``bc_test_<tag>`` (the breadcrumb user may)."""
    name = f"bc_test_{tag}"
    _admin_sql(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    return name


def drop_database(name: str) -> None:
    _admin_sql(f"DROP DATABASE IF EXISTS `{name}`")


def cluster_settings(tmp_path: Path, **overrides: object) -> Settings:
    """Cluster settings isolated by a unique topic prefix, worker id and database."""
    tag = uuid.uuid4().hex[:8]
    values: dict[str, object] = {
        "mode": "cluster", "data_dir": tmp_path / "cluster", "topic_prefix": f"t{tag}-",
        "worker_id": f"worker-{tag}", "worker_web_port": free_port(), "idle_flush_seconds": 3,
        "port": free_port(),
        "mysql_database": fresh_database(tag),
    }
    if "BREADCRUMB_VECTOR_STORE" not in os.environ:  # these tests' store: local mode in
        values["vector_store"] = "qdrant"  # one process (the quick start tests the default)
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def start_worker(settings: Settings, log: Path, *args: str) -> subprocess.Popen[bytes]:
    """``breadcrumb worker`` as a user runs it, configured through BREADCRUMB_* variables."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for name in ("mode", "data_dir", "topic_prefix", "worker_id", "worker_web_port",
                 "idle_flush_seconds", "mysql_database", "port", "vector_store"):
        env[f"BREADCRUMB_{name.upper()}"] = str(getattr(settings, name))
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return subprocess.Popen([sys.executable, "-m", "breadcrumb.cli", "worker", *args],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env,
                            cwd=log.parent)


def stop_worker(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(10)


def wait_api(worker: subprocess.Popen[bytes], log: Path, url: str, timeout: float = 120) -> None:
    """Wait for ``worker --serve-api`` to answer /healthz (failing fast, with its log, if
    the process died)."""
    import httpx

    from tests.conftest import wait_until

    def up() -> bool:
        assert worker.poll() is None, log.read_text()[-3000:]
        try:
            return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False
    wait_until(up, timeout=timeout, interval=0.5)


@pytest.fixture()
def private_db() -> Iterator[PrivateMariaDb]:
    infra = Path(tempfile.mkdtemp(prefix="bc-mariadb-"))
    db = PrivateMariaDb(infra, free_port())
    db.up()
    try:
        yield db
    finally:
        db.down()
        shutil.rmtree(infra, ignore_errors=True)

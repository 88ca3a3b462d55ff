"""The cluster quick start of docs/cluster.md, literally (issue 30): ``BREADCRUMB_MODE=cluster
breadcrumb worker &`` then ``BREADCRUMB_MODE=cluster breadcrumb serve``, two processes on
one data dir (the default ``.breadcrumb`` of their working directory), on the services
infra/ starts (Kafka, MariaDB; no Qdrant server: the default vector store is the topic
sink). Events published straight to Kafka are recalled through ``serve`` with the value
in the evidence; neither process listens beyond loopback; a second worker on the host
takes a free web port, or refuses in one line when its configured port is taken."""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from breadcrumb.settings import Settings
from tests.conftest import ROOT, example_events, wait_until
from tests.integration.conftest import drop_database, free_port, fresh_database
from tests.integration.faults import publish_events
from tests.integration.processes import (
    beyond_loopback,
    breadcrumb_command,
    isolated_env,
    listening,
    start,
    stop,
)

pytestmark = pytest.mark.integration
EMAIL_RE = r"EMAIL_RE = /^[^@\s]+@[^@\s]+\.[^@\s]+$/i"


def quick_start_commands() -> list[str]:
    """The shell lines of docs/cluster.md's quick start block."""
    text = (ROOT / "docs" / "cluster.md").read_text()
    block = re.search(r"## Quick start.*?```bash\n(.*?)```", text, re.S)
    assert block, "docs/cluster.md has no quick start block"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines()
            if line.strip() and not line.startswith("#")]


class QuickStart:
    def __init__(self, tmp_path: Path) -> None:
        self.tag = "qs" + uuid.uuid4().hex[:8]
        self.database = fresh_database(self.tag)
        self.port = free_port()
        self.env = isolated_env(self.tag, self.database, self.port)
        self.cwd = tmp_path
        self.url = f"http://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.settings = Settings(mode="cluster", topic_prefix=f"{self.tag}-")

    def run(self, args: list[str], log: str, **env: str) -> subprocess.Popen[bytes]:
        proc = start(args, {**self.env, **env}, self.cwd, self.cwd / log)
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        return (self.cwd / name).read_text(errors="replace")

    def wait_ready(self, worker: subprocess.Popen[bytes], serve: subprocess.Popen[bytes]) -> None:
        def up() -> bool:
            assert worker.poll() is None, self.log("worker.log")[-3000:]
            assert serve.poll() is None, self.log("serve.log")[-3000:]
            try:
                ready = httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False
            return ready and "Worker ready" in self.log("worker.log")
        wait_until(up, timeout=180, interval=0.5)

    def close(self) -> None:
        for proc in self.procs:
            stop(proc)
        drop_database(self.database)


@pytest.fixture()
def quick(tmp_path: Path) -> Iterator[QuickStart]:
    qs = QuickStart(tmp_path)
    try:
        yield qs
    finally:
        qs.close()


def _recall(url: str, query: str) -> dict[str, Any]:
    answer = httpx.post(f"{url}/v1/recall", json={"user_id": "demo", "query": query},
                        timeout=60)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_the_quick_start_recalls_a_value_published_through_kafka(quick: QuickStart) -> None:
    commands = quick_start_commands()
    assert "BREADCRUMB_MODE=cluster breadcrumb worker &" in commands
    assert "BREADCRUMB_MODE=cluster breadcrumb serve" in commands
    worker = quick.run(["worker"], "worker.log")
    serve = quick.run(["serve"], "serve.log")
    quick.wait_ready(worker, serve)

    assert publish_events(quick.settings, example_events()) == len(example_events())

    def recalled() -> bool:
        evidence = _recall(quick.url, "the exact email regex we decided for sign-up "
                                      "validation")["evidence"]
        return any(EMAIL_RE in ev["extracted_text"] for ev in evidence)
    wait_until(recalled, timeout=120, interval=1.0)

    # least exposure: nothing either process opened listens beyond loopback
    for proc, name in ((worker, "worker"), (serve, "serve")):
        sockets = listening(proc.pid)
        assert sockets, f"{name} listens nowhere?"
        assert beyond_loopback(sockets) == [], f"{name} listens on {sockets}"
    served = listening(serve.pid)
    assert ("127.0.0.1", quick.port) in served
    for text in (quick.log("worker.log"), quick.log("serve.log")):
        assert "Traceback" not in text


def test_a_second_worker_picks_a_free_web_port_or_names_the_taken_one(
        quick: QuickStart) -> None:
    first = quick.run(["worker"], "worker.log", BREADCRUMB_DATA_DIR="w1")
    wait_until(lambda: first.poll() is None and listening(first.pid) != [], timeout=120,
               interval=0.5)
    (_, taken), = listening(first.pid)
    second = quick.run(["worker"], "worker2.log", BREADCRUMB_DATA_DIR="w2")
    wait_until(lambda: second.poll() is None and len(listening(second.pid)) == 1,
               timeout=120, interval=0.5)
    (host, port), = listening(second.pid)
    assert host == "127.0.0.1" and port != taken
    if taken == 6066:
        assert f"port 6066 on 127.0.0.1 is taken (another worker?); using {port}" in \
            quick.log("worker2.log")

    refused = subprocess.run([*breadcrumb_command(), "worker"], cwd=quick.cwd, timeout=120,
                             env={**quick.env, "BREADCRUMB_WORKER_WEB_PORT": str(taken),
                                  "BREADCRUMB_DATA_DIR": "w3"},
                             capture_output=True, text=True)
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert lines == [f"breadcrumb: port {taken} on 127.0.0.1 is taken "
                     "(BREADCRUMB_WORKER_WEB_PORT; another worker on this host?): set another "
                     "port, or unset it to pick a free one"], refused.stderr


@pytest.mark.parametrize(("command", "env", "names"), [
    ("serve", {"BREADCRUMB_QDRANT_URL": "http://qdrant:6333"}, "BREADCRUMB_QDRANT_URL"),
    ("worker", {"BREADCRUMB_QDRANT_URL": "http://qdrant:6333"}, "BREADCRUMB_QDRANT_URL"),
    ("serve", {"BREADCRUMB_KAFKA_BOOTSTRAP": "127.0.0.1:1"}, "BREADCRUMB_KAFKA_BOOTSTRAP"),
    ("worker", {"BREADCRUMB_MYSQL_PASSWORD": "wrong"}, "BREADCRUMB_MYSQL_PASSWORD"),
    ("serve", {"BREADCRUMB_MYSQL_DATABASE": "bc_no_such_db"}, "BREADCRUMB_MYSQL_DATABASE"),
    ("worker", {"BREADCRUMB_S3_ENDPOINT": "http://127.0.0.1:1"}, "BREADCRUMB_S3_ENDPOINT"),
    ("serve", {"BREADCRUMB_VECTOR_STORE": "qdrnt"}, "BREADCRUMB_VECTOR_STORE"),
])
def test_a_misconfigured_start_is_one_line_naming_the_setting(
        tmp_path: Path, command: str, env: dict[str, str], names: str) -> None:
    base = isolated_env("qsbad", "breadcrumb", free_port())
    started = time.monotonic()
    done = subprocess.run([*breadcrumb_command(), command], cwd=tmp_path, timeout=120,
                          env={**base, **env}, capture_output=True, text=True)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and names in lines[0], done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert time.monotonic() - started < 60


def test_a_second_serve_on_the_data_dir_says_which_folder_in_one_line(
        quick: QuickStart) -> None:
    serve = quick.run(["serve"], "serve.log")
    wait_until(lambda: serve.poll() is None and ("127.0.0.1", quick.port) in
               listening(serve.pid), timeout=120, interval=0.5)
    done = subprocess.run([*breadcrumb_command(), "serve", "--port", str(free_port())],
                          cwd=quick.cwd, env=quick.env, timeout=120, capture_output=True,
                          text=True)
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1, done.stderr
    assert ".breadcrumb/sink-vectors" in lines[0] and "BREADCRUMB_DATA_DIR" in lines[0]

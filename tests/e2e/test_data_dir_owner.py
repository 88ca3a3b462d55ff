"""One owner per data dir (issue 13): the real CLI in subprocesses against a real server.

A second opener (memory show, recall, ingest, import, mcp) while ``breadcrumb serve`` runs
must go through the server and never open its stores: the server keeps turning newly
ingested events into memories. A process that holds the dir without serving HTTP makes
other commands stop with one line naming its pid; a stale ``server.json`` is ignored.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import EXAMPLE, ROOT, wait_until
from tests.unit.test_importers import CLAUDE

CLI = [sys.executable, "-m", "breadcrumb.cli"]
HASH = ["--embedder", "hash"]


def run_cli(*args: str, data_dir: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args, "--data-dir", str(data_dir), *HASH], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, check=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Servers:
    """``breadcrumb serve`` subprocesses, stopped at the end of the test."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, data_dir: Path, wait: bool = True) -> tuple[str, subprocess.Popen[bytes]]:
        port = free_port()
        log = (self.tmp / f"serve-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen([*CLI, "serve", "--port", str(port), "--data-dir", str(data_dir),
                                 *HASH], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        if wait:
            wait_until(lambda: _answers(url), timeout=90, interval=0.2)
        return url, proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(20)


@pytest.fixture()
def servers(tmp_path: Path) -> Iterator[Servers]:
    s = Servers(tmp_path)
    yield s
    s.stop()


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def thread_events(user: str, thread: str, n: int, tag: str) -> list[dict[str, Any]]:
    """A short session whose memory names ``tag``; ends with ``session_end``."""
    out = [{"event_id": f"{thread}-{i}", "user_id": user, "thread_id": thread,
            "ts": f"2026-11-20T10:{i:02d}:00Z", "role": "assistant", "kind": "message",
            "content": f"step {i}: we set {tag}_PORT={6000 + i} for the {tag} service"}
           for i in range(n)]
    out.append({"event_id": f"{thread}-end", "user_id": user, "thread_id": thread,
                "ts": "2026-11-20T11:00:00Z", "role": "system", "kind": "session_end",
                "content": "end"})
    return out


def post_and_wait(url: str, events: list[dict[str, Any]]) -> None:
    answer = httpx.post(f"{url}/v1/events", json={"events": events}, timeout=60)
    assert answer.status_code == 202, answer.text
    wait_until(lambda: httpx.get(f"{url}/v1/stats", timeout=30).json()["pending"] == 0,
               timeout=120, interval=0.2)


def memory_threads(url: str, user: str, query: str) -> set[str]:
    answer = httpx.post(f"{url}/v1/recall", json={"user_id": user, "query": query, "k": 10},
                        timeout=60).json()
    return {m["source_range"]["thread_id"] for m in answer["memories"]}


async def _mcp_search(data_dir: Path, user: str, query: str) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "breadcrumb.cli", "mcp", "--data-dir", str(data_dir), *HASH], cwd=str(ROOT))
    async with Client(params, read_timeout_seconds=120) as client:
        result = await client.call_tool("search_memory", {"user_id": user, "query": query,
                                                          "detail": "full"})
    content: dict[str, Any] = result.structured_content or {}
    return content


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The command failed with exactly one line on stderr and no traceback."""
    assert result.returncode != 0, result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert "Traceback" not in result.stderr, result.stderr
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_second_openers_go_through_the_server_which_keeps_building_memories(
        servers: Servers, tmp_path: Path) -> None:
    data = tmp_path / "data"
    url, proc = servers.start(data)
    post_and_wait(url, thread_events("u1", "before", 12, "ALPHA"))
    assert "before" in memory_threads(url, "u1", "ALPHA_PORT")
    memory_id = httpx.post(f"{url}/v1/recall", json={"user_id": "u1", "query": "ALPHA_PORT"},
                           timeout=60).json()["memories"][0]["id"]

    shown = run_cli("memory", "show", memory_id, "--user", "u1", data_dir=data)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["id"] == memory_id
    changed = run_cli("memory", "set", memory_id, "--user", "u1", "--tier", "confirmed",
                      "--reason", "checked", data_dir=data)
    assert changed.returncode == 0 and json.loads(changed.stdout)["tier"] == "confirmed"
    audit = run_cli("memory", "audit", memory_id, "--user", "u1", data_dir=data)
    assert json.loads(audit.stdout)[-1]["to"] == "confirmed"
    recalled = run_cli("recall", "ALPHA_PORT", "--user", "u1", "--json", data_dir=data)
    assert recalled.returncode == 0, recalled.stderr
    assert json.loads(recalled.stdout)["memories"][0]["id"] == memory_id
    ingested = run_cli("ingest", str(EXAMPLE), data_dir=data)
    assert ingested.returncode == 0, ingested.stderr
    assert json.loads(ingested.stdout)["accepted"] == 31
    imported = run_cli("import", "--format", "claude-code", str(CLAUDE), "--user", "dev",
                       data_dir=data)
    assert imported.returncode == 0, imported.stderr
    found = anyio.run(_mcp_search, data, "u1", "ALPHA_PORT")
    assert found["memories"][0]["id"] == memory_id

    # the server still owns its stores and builds memories from events sent afterwards
    assert proc.poll() is None
    post_and_wait(url, thread_events("u1", "after", 12, "OMEGA"))
    assert "after" in memory_threads(url, "u1", "OMEGA_PORT")
    assert "auth-refactor" in memory_threads(url, "demo", "email regex")  # the CLI ingest
    assert memory_threads(url, "dev", "Redis URL rate limit")  # the CLI import
    stats = httpx.get(f"{url}/v1/stats", timeout=30).json()
    assert stats["dead_letters"] == 0 and stats["pending"] == 0
    assert httpx.get(f"{url}/readyz", timeout=30).status_code == 200


def test_a_second_serve_names_the_pid_and_the_first_keeps_serving(
        servers: Servers, tmp_path: Path) -> None:
    data = tmp_path / "data"
    url, proc = servers.start(data)
    second = subprocess.run([*CLI, "serve", "--port", str(free_port()), "--data-dir", str(data),
                             *HASH], cwd=ROOT, capture_output=True, text=True, timeout=120)
    line = one_line_error(second)
    assert f"pid {proc.pid}" in line and str(data) in line
    post_and_wait(url, thread_events("u1", "still", 12, "BETA"))
    assert "still" in memory_threads(url, "u1", "BETA_PORT")


def test_a_holder_without_http_makes_other_commands_name_its_pid(tmp_path: Path) -> None:
    data = tmp_path / "data"
    holder = subprocess.Popen([*CLI, "mcp", "--data-dir", str(data), *HASH], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    try:
        lock = data / "breadcrumb.lock"
        wait_until(lambda: lock.exists() and f'"pid":{holder.pid}' in lock.read_text(),
                   timeout=90, interval=0.2)
        for args in (("import", "--format", "claude-code", str(CLAUDE)),
                     ("recall", "anything", "--user", "u1"),
                     ("memory", "show", "some-id", "--user", "u1"),
                     ("replay",), ("optimize",), ("serve", "--port", str(free_port()))):
            line = one_line_error(run_cli(*args, data_dir=data, timeout=120))
            assert f"pid {holder.pid}" in line and "breadcrumb mcp" in line, (args, line)
        assert holder.poll() is None  # the holder was not disturbed
    finally:
        holder.terminate()
        holder.wait(20)
    after = run_cli("recall", "anything", "--user", "u1", "--json", data_dir=data)
    assert after.returncode == 0, after.stderr  # the lock went with its owner


def test_stale_server_json_is_ignored(servers: Servers, tmp_path: Path) -> None:
    mine, other = tmp_path / "mine", tmp_path / "other"
    assert run_cli("ingest", str(EXAMPLE), data_dir=mine).returncode == 0
    other_url, other_proc = servers.start(other)  # an empty data dir, served
    # a server.json left behind by a SIGTERM'd server, naming a dead pid ...
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (mine / "server.json").write_text(json.dumps({"url": other_url, "pid": dead.pid,
                                                  "instance": "gone"}))
    recalled = run_cli("recall", "the email regex", "--user", "demo", "--json", data_dir=mine)
    assert recalled.returncode == 0, recalled.stderr
    assert json.loads(recalled.stdout)["memories"], "answered by the other data dir's server"
    # ... or the live server of another data dir (its own marker copied here)
    (mine / "server.json").write_bytes((other / "server.json").read_bytes())
    recalled = run_cli("recall", "the email regex", "--user", "demo", "--json", data_dir=mine)
    assert json.loads(recalled.stdout)["memories"]
    assert not (mine / "server.json").exists()  # removed by the next owner
    assert httpx.get(f"{other_url}/v1/stats", timeout=30).json()["events_received"] == 0
    assert other_proc.poll() is None


def test_identity_tells_data_dirs_apart(servers: Servers, tmp_path: Path) -> None:
    url, _ = servers.start(tmp_path / "a")
    ident = httpx.get(f"{url}/v1/identity", timeout=10).json()
    health = httpx.get(f"{url}/healthz", timeout=30).json()
    marker = json.loads((tmp_path / "a" / "server.json").read_text())
    assert ident["instance"] == health["instance"] == marker["instance"]
    assert ident["data_dir"] == str((tmp_path / "a").resolve())
    lock = json.loads((tmp_path / "a" / "breadcrumb.lock").read_text())
    assert lock["url"] == url and lock["instance"] == ident["instance"]


def test_a_server_that_does_not_answer_is_waited_for_never_bypassed(
        servers: Servers, tmp_path: Path) -> None:
    data = tmp_path / "data"
    url, proc = servers.start(data)
    os.kill(proc.pid, signal.SIGSTOP)  # alive, owns the dir, answers nothing (a slow /healthz)
    try:
        result = subprocess.run([*CLI, "ingest", str(EXAMPLE), "--data-dir", str(data), *HASH],
                                cwd=ROOT, capture_output=True, text=True, timeout=120,
                                env={**os.environ, "BREADCRUMB_SERVER_WAIT_SECONDS": "3"})
        line = one_line_error(result)
        assert f"pid {proc.pid}" in line and "did not answer" in line
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    post_and_wait(url, thread_events("u1", "resumed", 12, "GAMMA"))
    assert "resumed" in memory_threads(url, "u1", "GAMMA_PORT")
    assert httpx.get(f"{url}/v1/stats", timeout=30).json()["events_received"] == 13

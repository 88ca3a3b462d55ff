"""The CLI as a user runs it, and a hard kill of the server in the middle of ingestion."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import EXAMPLE, wait_until
from tests.support.serve import free_port, healthy

CLI = [sys.executable, "-m", "breadcrumb.cli"]


def _run(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args, "--data-dir", str(data_dir)], capture_output=True,
                          text=True, timeout=300, check=False)


def test_cli_ingest_then_recall(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ingest = _run("ingest", str(EXAMPLE), data_dir=data)
    assert ingest.returncode == 0, ingest.stderr
    report = json.loads(ingest.stdout)
    assert report["accepted"] == 31 and report["rejected"] == []
    again = _run("ingest", str(EXAMPLE), data_dir=data)
    assert json.loads(again.stdout)["duplicates"] == 31
    recall = _run("recall", "what port does the database use now?", "--user", "demo", "--json",
                  data_dir=data)
    assert recall.returncode == 0, recall.stderr
    answer = json.loads(recall.stdout)
    assert answer["classification"] == "exact_value_needed"
    assert "6432" in "\n".join(e["extracted_text"] for e in answer["evidence"])
    human = _run("recall", "the email regex", "--user", "demo", data_dir=data)
    assert "source_range auth-refactor" in human.stdout and "| " in human.stdout



@pytest.fixture()
def server_factory(tmp_path: Path) -> Iterator[Any]:
    procs: list[subprocess.Popen[bytes]] = []
    port = free_port()

    def start() -> tuple[str, subprocess.Popen[bytes]]:
        log = (tmp_path / f"serve-{len(procs)}.log").open("wb")
        proc = subprocess.Popen(
            [*CLI, "serve", "--port", str(port), "--data-dir", str(tmp_path / "data")],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: healthy(url), timeout=60)
        return url, proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)



def _events(n_threads: int, per_thread: int) -> list[dict[str, Any]]:
    out = []
    for t in range(n_threads):
        for i in range(per_thread):
            kind = "tool_result" if i % 7 == 6 else "message"
            out.append({"event_id": f"r-{t}-{i}", "user_id": "u1", "thread_id": f"thread-{t}",
                        "ts": f"2026-11-0{1 + t % 9}T10:{i % 60:02d}:00Z", "role": "assistant",
                        "kind": kind,
                        "content": f"step {i} of thread {t}: value_{t}_{i} = {i * t}"})
        out.append({"event_id": f"r-{t}-end", "user_id": "u1", "thread_id": f"thread-{t}",
                    "ts": "2026-11-09T23:59:00Z", "role": "system", "kind": "session_end",
                    "content": "end"})
    return out


def test_hard_kill_mid_ingestion_loses_nothing(server_factory: Any) -> None:
    events = _events(6, 70)
    first, rest = events[:240], events[240:]
    url, proc = server_factory()
    for i in range(0, len(first), 40):
        assert httpx.post(f"{url}/v1/events", json={"events": first[i:i + 40]},
                          timeout=30).status_code == 202
    unprocessed_at_kill = httpx.get(f"{url}/v1/stats", timeout=60).json()["unprocessed"]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    url, _ = server_factory()
    for i in range(0, len(events), 40):  # the client retries everything: duplicates are fine
        assert httpx.post(f"{url}/v1/events", json={"events": events[i:i + 40]},
                          timeout=30).status_code == 202
    wait_until(lambda: httpx.get(f"{url}/v1/stats", timeout=60).json()["pending"] == 0, timeout=240)
    stats = httpx.get(f"{url}/v1/stats", timeout=60).json()
    assert stats["events_processed"] == len(events), (stats, unprocessed_at_kill, len(rest))
    assert stats["duplicates"] == len(first)
    for t in range(6):
        got = httpx.get(f"{url}/v1/threads/thread-{t}/events",
                        params={"user_id": "u1", "start": 0, "end": 1000}).json()
        assert [g["event_id"] for g in got] == [e["event_id"] for e in events
                                                 if e["thread_id"] == f"thread-{t}"]
    assert stats["memories"]["by_status"]["active"] >= 12


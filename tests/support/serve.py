"""A real ``breadcrumb serve`` subprocess on a free port, for tests that talk HTTP to it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.conftest import wait_until

CLI = [sys.executable, "-m", "breadcrumb.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def serving(workdir: Path, *args: str, embedder: str = "hash") -> Iterator[str]:
    """``breadcrumb serve`` on ``workdir/data`` (log in ``workdir/serve.log``); yields its URL
    once ``/healthz`` answers, and stops it afterwards."""
    port = free_port()
    log = (workdir / "serve.log").open("wb")
    proc = subprocess.Popen([*CLI, "serve", "--port", str(port), "--data-dir",
                             str(workdir / "data"), "--embedder", embedder, *args],
                            stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: healthy(url), timeout=90)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:  # a long backlog: do not hang the suite on it
            proc.kill()
            proc.wait(10)
        log.close()

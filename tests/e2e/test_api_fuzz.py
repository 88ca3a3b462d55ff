"""Issue 12 against a live ``breadcrumb serve``: schemathesis over every operation of
``/openapi.json`` (events included) finds no server error; a 200 MB body answers 413
without being held in memory; a refused body leaves the keep-alive connection usable."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, wait_until
from tests.support.serve import free_port, healthy

ST = Path(sys.executable).with_name("st")
JSON = {"content-type": "application/json"}
#: Bounded so the stage takes a minute or two on a shared 2-core machine.
MAX_EXAMPLES = int(os.environ.get("BREADCRUMB_FUZZ_EXAMPLES", "12"))




class Server:
    def __init__(self, url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.url, self.proc, self.log = url, proc, log

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("fuzz")
    port = free_port()
    log_path = tmp / "serve.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "breadcrumb.cli", "serve", "--port", str(port),
         "--data-dir", str(tmp / "data"), "--embedder", "hash"],
        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "BREADCRUMB_INDEX_OPTIMIZE_MIN_POINTS": "0"})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: healthy(url) or proc.poll() is not None, timeout=90)
        assert proc.poll() is None, log_path.read_text(errors="replace")
        yield Server(url, proc, log_path)
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def test_a_200_mb_body_answers_413_and_is_never_held_in_memory(server: Server) -> None:
    before = server.rss_kb()
    chunk = b"x" * (1 << 20)

    def body() -> Iterator[bytes]:
        yield b'{"events": [{"content": "'
        for _ in range(200):
            yield chunk
        yield b'"}]}'

    response = httpx.post(f"{server.url}/v1/events", content=body(), headers=JSON, timeout=120)
    assert response.status_code == 413, response.text
    assert "limit_body_bytes" in response.json()["error"]["message"]
    grown_mb = (server.rss_kb() - before) / 1024
    assert grown_mb < 64, f"server RSS grew by {grown_mb:.0f} MB"
    declared = httpx.post(f"{server.url}/v1/events", content=b"{}" + b" " * (40 << 20),
                          headers=JSON, timeout=120)
    assert declared.status_code == 413
    assert healthy(server.url)


def test_refused_bodies_keep_the_connection_usable(server: Server) -> None:
    bad = ['{"events": [{"content": "x\\ud800"}]}', '{"events": [{"attrs": {"n": 1e999}}]}',
           '{"events": [{"attrs": {"n": 36893488147419103232}}]}', "[" * 100_000]
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for text in bad:
            response = http.post("/v1/events", content=text.encode(), headers=JSON)
            assert response.status_code == 422, (text[:40], response.text)
            assert response.headers.get("connection", "") != "close"
        assert http.get("/healthz").status_code == 200


def test_schemathesis_finds_no_server_error(server: Server, tmp_path: Path) -> None:
    paths = httpx.get(f"{server.url}/openapi.json", timeout=10).json()["paths"]
    events_body = paths["/v1/events"]["post"]["requestBody"]["content"]["application/json"]
    assert "events" in events_body["schema"]["properties"]
    for path, ops in paths.items():
        for method, op in ops.items():
            if method in ("post", "patch", "put") and path != "/v1/admin/optimize":
                assert "requestBody" in op, f"{method.upper()} {path} has no request schema"
    command = [
        str(ST), "run", f"{server.url}/openapi.json", "--checks", "not_a_server_error",
        "--max-examples", str(MAX_EXAMPLES), "--seed", "12", "--workers", "1",
        "--phases", "examples,coverage,fuzzing", "--generation-database", "none",
        "--request-timeout", "60", "--no-color", "--suppress-health-check", "all",
        "--exclude-path", "/v1/dashboard/stream",  # an endless SSE stream
        "--report", "junit", "--report-junit-path", str(tmp_path / "junit.xml"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    summary = done.stdout[-4000:]
    assert done.returncode == 0, summary + done.stderr[-2000:]
    assert "Server error" not in done.stdout, summary
    assert " 0 generated" not in done.stdout and "passed" in done.stdout, summary
    served = server.log.read_text(errors="replace")
    assert "Exception in ASGI application" not in served
    assert "unexpected error on" not in served, served[-3000:]

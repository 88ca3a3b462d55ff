"""Issue 47 item 7: ``breadcrumb serve`` stopped with SIGTERM while a dashboard page is
open (real Chromium holding the live stream) exits 0 within 2 s with no traceback — the
server ends its live streams as it starts shutting down instead of waiting out uvicorn's
graceful timeout and cancelling them. Then, started again on the same port, the page
reconnects by itself and clears the error a search made while the server was away (the
error named the server). Needs Debian's chromium + chromium-driver and selenium."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import wait_until
from tests.e2e.test_dashboard_browser import _until, browser  # noqa: F401  (fixture by name)
from tests.e2e.test_dashboard_views import _click, _fill, _go, _js, _open_ready, _text
from tests.support.memview import changed_value
from tests.support.serve import CLI, free_port, healthy


def _serve(tmp_path: Path, port: int, log_name: str) -> subprocess.Popen[bytes]:
    log = (tmp_path / log_name).open("wb")
    proc = subprocess.Popen([*CLI, "serve", "--port", str(port), "--data-dir",
                             str(tmp_path / "data"), "--embedder", "hash"],
                            stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    wait_until(lambda: healthy(f"http://127.0.0.1:{port}") or proc.poll() is not None, 90)
    assert proc.poll() is None, (tmp_path / log_name).read_text(errors="replace")
    return proc


def test_sigterm_with_a_page_open(tmp_path: Path, browser: Any) -> None:  # noqa: F811
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = _serve(tmp_path, port, "serve-1.log")
    try:
        body = {"events": changed_value("local")}
        assert httpx.post(f"{url}/v1/events", json=body).status_code == 202
        _open_ready(browser, url, "#/memories")
        _until(browser, lambda d: int(_js(d, "return document.body.dataset.snapshots || 0")) >= 2,
               "the live stream")
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    log = (tmp_path / "serve-1.log").read_text(errors="replace")
    assert code == 0, log
    assert took < 2.0, (took, log)
    assert "Traceback" not in log and "timeout graceful shutdown" not in log, log
    assert "ERROR" not in log, log

    # the server is away: a search says which server is not answering ...
    _fill(browser, "#recall-query", "which DB_PORT do we use now?")
    _click(browser, "#recall-form button")
    _until(browser, lambda d: "is not answering" in _text(d, "#recall-status"), "the error")
    assert f"127.0.0.1:{port}" in _text(browser, "#recall-status")
    _until(browser, lambda d: "is not answering" in _text(d, "#error-banner"), "the banner", 30)
    # ... and once it is back, the page reconnects and the error is gone
    again = _serve(tmp_path, port, "serve-2.log")
    try:
        _until(browser, lambda d: int(_js(d, "return document.body.dataset.reconnects || 0"))
               >= 1, "the reconnection", 30)
        _until(browser, lambda d: not _text(d, "#recall-status"), "the error cleared")
        assert _js(browser, "return document.getElementById('error-banner').hidden")
        _go(browser, "#/memories")
        _until(browser, lambda d: "Tenant local holds" not in _text(d, "#mem-status") and
               _js(d, "return document.querySelectorAll('#mem-list tbody tr').length") >= 1,
               "the list read again")
    finally:
        again.send_signal(signal.SIGTERM)
        assert again.wait(30) == 0

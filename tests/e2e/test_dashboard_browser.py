"""The dashboard in a real headless Chromium against a real ``breadcrumb serve`` process.

Needs Debian's ``chromium`` and ``chromium-driver`` (``bash infra/browser.sh``) and the
``selenium`` package; without them the test FAILS with the install line (never skips).
The screenshot is kept at ``tests/artifacts/dashboard.png``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, example_events, wait_until
from tests.support.serve import free_port, healthy

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACT = ROOT / "tests" / "artifacts" / "dashboard.png"
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-dev-shm-usage", "--window-size=1400,1100"]




@pytest.fixture()
def server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "breadcrumb.cli", "serve", "--port", str(port),
         "--data-dir", str(tmp_path / "data"), "--embedder", "hash"],
        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: healthy(url) or proc.poll() is not None, timeout=60)
        assert proc.poll() is None, (tmp_path / "serve.log").read_text(errors="replace")
        yield url
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


@pytest.fixture()
def browser(tmp_path: Path) -> Iterator[Any]:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if missing:
        pytest.fail(f"{', '.join(missing)} not found: install Debian's headless browser with "
                    "`bash infra/browser.sh` (apt-get install -y chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("the selenium package is missing: pip install 'selenium>=4.20'")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*CHROME_FLAGS, f"--user-data-dir={tmp_path / 'chrome-profile'}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()  # closes the SSE connection before the server is stopped


def _text(driver: Any, element_id: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.ID, element_id).text)


def _status_counts(driver: Any) -> dict[str, str]:
    from selenium.webdriver.common.by import By

    rows = driver.find_elements(By.CSS_SELECTOR, "#memories-status tbody tr[data-key]")
    return {r.get_attribute("data-key"): r.find_element(By.CLASS_NAME, "count").text for r in rows}


def _until(driver: Any, predicate: Any, what: str, timeout: float = 20) -> None:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(driver, timeout, poll_frequency=0.1).until(lambda d: predicate(d))
    except TimeoutException as exc:
        raise AssertionError(f"dashboard never showed {what} within {timeout} s") from exc


def test_dashboard_shows_live_numbers(server: str, browser: Any) -> None:
    browser.get(f"{server}/dashboard")
    assert browser.title.startswith("Breadcrumb")
    _until(browser, lambda d: d.execute_script("return document.body.dataset.snapshots"),
           "a first snapshot")
    assert _text(browser, "events-received") == "0"
    assert _text(browser, "conn") == "live" and _text(browser, "mode") == "mode embedded"

    events = example_events()
    assert httpx.post(f"{server}/v1/events", json={"events": events}).status_code == 202
    _until(browser, lambda d: _text(d, "events-received") == str(len(events)), "31 received")
    _until(browser, lambda d: float(_text(d, "rate-in")) > 0, "a non-zero events-in rate")
    _until(browser, lambda d: _text(d, "events-processed") == str(len(events)), "31 processed")
    _until(browser, lambda d: int(_status_counts(d).get("active", "0")) >= 1, "active memories")

    for query in ("the exact email regex we decided for sign-up",
                  "summarize what we did on the deploy pipeline"):
        answer = httpx.post(f"{server}/v1/recall", json={"user_id": "demo", "query": query})
        assert answer.status_code == 200
    _until(browser, lambda d: _text(d, "recalls-total") == "2",
           "2 recalls (app.py must call telemetry_of(app).record_recall)")
    _until(browser, lambda d: "exact_value_needed" in _text(d, "recalls"), "the recall rows")
    bad = {**events[0], "event_id": "bad-1", "role": "robot"}
    assert httpx.post(f"{server}/v1/events", json={"events": [bad]}).status_code == 422
    _until(browser, lambda d: _text(d, "dead-letters") == "1", "one dead letter")

    _until(browser, lambda d: d.execute_script(
        "return document.querySelectorAll('#chart polyline').length") == 2, "the chart lines")
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACT)) and ARTIFACT.stat().st_size > 10_000
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors

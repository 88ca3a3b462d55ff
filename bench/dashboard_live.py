"""The dashboard's live Memories list with N memories on the page: what one live poll
costs in the browser, against reloading the whole list, in the same run.

    nice python bench/dashboard_live.py [N] [--rounds R]

A real ``breadcrumb serve`` (hash embedder) on a temporary data dir gets N closed
one-topic sessions of one tenant (one memory each); headless Chromium (Debian's
``chromium`` + ``chromium-driver``, ``bash infra/browser.sh``) opens ``#/memories`` and
pages with "Load more" until all N rows are on the page. Then, per round, interleaved:

* ``poll``: one live poll as the page makes it every 2 s (``memPoll``: the first 20 of
  the same query read again, rows shown updated in place, new ones inserted), then a
  forced layout; with a new memory derived just before it (so it inserts one row);
* ``reload``: what re-rendering everything would cost instead: the list emptied and read
  again page by page (``memLoad`` until no cursor) with its layout.

Both are timed in the page (``performance.now()``, HTTP included). It prints p50 / p95
and reload/poll, and checks that the row marked before the rounds is the same DOM node
after them (the poll never rebuilt it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

TENANT = "bench"
TIMED = """
const done = arguments[arguments.length - 1];
(async () => {
  const t0 = performance.now();
  await %s;
  void document.body.offsetHeight;  // layout included
  done(performance.now() - t0);
})();
"""
MARK = "document.querySelector('#mem-list tbody tr:last-child').dataset.marker = 'kept'"
MARKED = "return document.querySelectorAll('#mem-list tbody tr[data-marker=kept]').length"
RELOAD = "(async () => { await memLoad(true); while (Mem.cursor) await memLoad(false); })()"


def _session(i: int, day: int) -> list[dict[str, Any]]:
    thread = f"job-{i:05d}"
    base = {"user_id": TENANT, "project_id": "shop", "agent_id": "bench", "thread_id": thread,
            "role": "assistant"}
    ts = f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T10:{i % 60:02d}:00Z"
    return [{**base, "event_id": f"{thread}-0", "ts": ts, "kind": "message",
             "content": f"Rename helper {i} in module m{i}.py and keep its tests green."},
            {**base, "event_id": f"{thread}-1", "ts": ts, "kind": "session_end",
             "content": "end"}]


def _settled(url: str, want: int) -> None:
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        stats = httpx.get(f"{url}/v1/stats", timeout=30).json()
        if stats["unprocessed"] == 0 and sum(stats["memories"]["by_status"].values()) >= want:
            return
        time.sleep(0.5)
    raise SystemExit(f"{want} memories not derived within 900 s")


def _browser(profile: Path) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1100", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_script_timeout(600)
    return driver


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(n: int, rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    port = 18000 + os.getpid() % 1000
    log = (work / "serve.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "breadcrumb.cli", "serve", "--port",
                             str(port), "--data-dir", str(work / "data"), "--embedder", "hash"],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    driver = None
    try:
        for _ in range(120):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        for start in range(0, n, 200):
            events = [e for i in range(start, min(n, start + 200)) for e in _session(i, i % 300)]
            assert httpx.post(f"{url}/v1/events", json={"events": events},
                              timeout=120).status_code == 202
        _settled(url, n)
        driver = _browser(work / "chrome")
        driver.get(f"{url}/dashboard")
        driver.execute_script(f"sessionStorage.setItem('breadcrumb-tenant', '{TENANT}')")
        driver.get(f"{url}/dashboard?x=1#/memories")
        time.sleep(2)
        driver.execute_script("clearInterval(Mem.timer)")  # the bench polls, not the timer
        first = driver.execute_async_script(TIMED % RELOAD)
        shown = driver.execute_script("return Mem.seen.size")
        assert shown == n, (shown, n)
        polls, reloads, kept = [], [], 0
        for r in range(rounds):
            late = _session(n + r, 335)  # dated after every other: lands at the head
            assert httpx.post(f"{url}/v1/events", json={"events": late}).status_code == 202
            _settled(url, n + r + 1)
            driver.execute_script(MARK)
            polls.append(driver.execute_async_script(TIMED % "memPoll()"))
            kept += driver.execute_script(MARKED)  # the same DOM node after the poll
            if r % 2:
                reloads.append(driver.execute_async_script(TIMED % RELOAD))
        rows = driver.execute_script("return document.querySelectorAll('#mem-list tbody tr')"
                                     ".length")
        print(f"N={n} memories on the page (first full load {first:.0f} ms), {rounds} rounds, "
              f"{rows} rows at the end, marked last row kept by {kept} of {rounds} polls")
        for name, values in (("poll (+1 new row)", polls), ("reload everything", reloads)):
            print(f"  {name:20s} p50 {statistics.median(values):8.1f} ms   "
                  f"p95 {_pct(values, 0.95):8.1f} ms   ({len(values)} samples)")
        ratio = statistics.median(reloads) / statistics.median(polls)
        print(f"  reload / poll (p50): {ratio:.1f}x")
    finally:
        if driver is not None:
            driver.quit()
        proc.terminate()
        proc.wait(30)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    run(args.n, args.rounds)


if __name__ == "__main__":
    main()

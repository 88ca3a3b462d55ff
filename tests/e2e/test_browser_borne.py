"""A web page from another origin cannot write events or read a thread (real Chromium).

A real ``breadcrumb serve`` runs on loopback with no key at all (the open mode, where only
the browser checks stand between a page and the data). A tiny ``http.server`` on another
port serves the attacker's page; from it Chromium tries a CORS-"simple" ``text/plain``
POST (``no-cors``), a JSON POST and a read of a thread. A second attack rebinds a name
(``rebind.test``, mapped to 127.0.0.1 in Chromium) to read the API same-origin: the
``Host`` check refuses it. Needs Debian's chromium + chromium-driver and selenium (FAILS
with the install line otherwise, as the dashboard browser test does).
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import example_events
from tests.e2e.test_dashboard_browser import (  # noqa: F401  (the fixture is used by name)
    CHROME_FLAGS,
    CHROMEDRIVER,
    CHROMIUM,
    server,
)
from tests.support.serve import free_port

ATTACK = """
const api = arguments[0], event = arguments[1];
const done = arguments[arguments.length - 1];
const out = {};
async function attempt(name, run) {
  try { out[name] = await run(); } catch (e) { out[name] = "blocked: " + e.name; }
}
(async () => {
  await attempt("simple_post", async () => {
    const r = await fetch(api + "/v1/events", {method: "POST", mode: "no-cors",
      headers: {"Content-Type": "text/plain"}, body: JSON.stringify({events: [event]})});
    return "opaque:" + r.type;
  });
  await attempt("json_post", async () => {
    const r = await fetch(api + "/v1/events", {method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({events: [{...event, event_id: "attack-2"}]})});
    return "read:" + r.status + ":" + await r.text();
  });
  await attempt("read_thread", async () => {
    const r = await fetch(api + "/v1/threads/" + event.thread_id + "/events?user_id="
      + event.user_id);
    return "read:" + r.status + ":" + await r.text();
  });
  await attempt("no_cors_read", async () => {
    const r = await fetch(api + "/v1/threads/" + event.thread_id + "/events?user_id="
      + event.user_id, {mode: "no-cors"});
    return "opaque:" + r.type + ":" + (await r.text()).length;
  });
  done(out);
})();
"""


@pytest.fixture()
def foreign_page(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "attacker"
    root.mkdir()
    (root / "index.html").write_text("<!doctype html><title>attacker</title><p>hi</p>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/index.html"
    finally:
        httpd.shutdown()
        thread.join(10)


@pytest.fixture()
def chromium(tmp_path: Path) -> Iterator[Any]:
    import shutil

    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if missing:
        pytest.fail(f"{', '.join(missing)} not found: `bash infra/browser.sh`")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*CHROME_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                 "--host-resolver-rules=MAP rebind.test 127.0.0.1"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_script_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def test_foreign_page_cannot_write_or_read(server: str, foreign_page: str,  # noqa: F811
                                           chromium: Any) -> None:
    event = {**example_events()[0], "event_id": "attack-1", "thread_id": "victim"}
    assert httpx.post(f"{server}/v1/events", json={"events": [{
        **event, "event_id": "victim-1", "index": 1}]}).status_code == 202  # data to steal
    chromium.get(foreign_page)
    out = chromium.execute_async_script(ATTACK, server, event)

    assert out["simple_post"] == "opaque:opaque"  # the browser sent it; the server refused
    assert out["json_post"].startswith("blocked")  # preflight / CORS: no answer readable
    assert out["read_thread"].startswith("blocked")
    assert out["no_cors_read"] == "opaque:opaque:0"
    own = httpx.get(f"{server}/v1/threads/victim/events", params={"user_id": event["user_id"]})
    assert [e["event_id"] for e in own.json()] == ["victim-1"]  # nothing of the page written
    assert httpx.get(f"{server}/v1/stats").json()["events_received"] == 1
    text = httpx.post(f"{server}/v1/events", content=b'{"events": []}',
                      headers={"content-type": "text/plain", "origin": "http://evil.test"})
    assert text.status_code == 403 and text.json()["error"]["code"] == "foreign_origin"


def test_dns_rebinding_page_reads_nothing(server: str, chromium: Any) -> None:  # noqa: F811
    port = server.rsplit(":", 1)[1]
    httpx.post(f"{server}/v1/events", json={"events": [example_events()[0]]})
    chromium.get(f"http://rebind.test:{port}/v1/threads/"
                 f"{example_events()[0]['thread_id']}/events?user_id=demo")
    body = chromium.find_element("tag name", "body").text
    assert "host_not_allowed" in body and "event_id" not in body


def test_dashboard_with_a_key_shows_only_its_tenant(server: str, chromium: Any,  # noqa: F811
                                                    tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from breadcrumb.stores.keys.store import new_key, sqlite_key_store
    from tests.conftest import wait_until

    store = sqlite_key_store(tmp_path / "data")  # the data dir the server fixture serves
    keys = {}
    for tenant in ("demo", "t2"):
        record, keys[tenant] = new_key(tenant, "reader")
        store.add(record)
    wait_until(lambda: httpx.get(f"{server}/v1/stats").status_code == 401, timeout=10)
    for tenant, query in (("demo", "where is the demo regex"), ("t2", "t2 secret plan")):
        asked = httpx.post(f"{server}/v1/recall", json={"query": query},
                           headers={"Authorization": f"Bearer {keys[tenant]}"})
        assert asked.status_code == 200

    chromium.get(f"{server}/dashboard#key={keys['demo']}")
    wait_until(lambda: chromium.execute_script("return document.body.dataset.snapshots"),
               timeout=30)
    assert "key=" not in chromium.current_url  # the key left the address bar
    recalls = chromium.find_element(By.ID, "recalls").text
    assert "where is the demo regex" in recalls and "t2 secret plan" not in recalls

    chromium.execute_script("sessionStorage.clear()")
    chromium.get(f"{server}/dashboard")
    wait_until(lambda: "needs an API key" in chromium.find_element(By.ID, "error-banner").text,
               timeout=30)

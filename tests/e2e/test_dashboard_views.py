"""The dashboard's views (issue 26 item 2) in a real headless Chromium against a real
``breadcrumb serve`` process, without keys and with keys.

Memories (a recall from the search box, the list growing live without re-rendering),
A memory (the supersession chain of a changed value, a tier change made from the page and
its audit row, the Source with the extracted lines marked), the Recall inspector, a
Thread with its open window, Dead letters and Forget; a reader key sees only its tenant
and cannot change or forget anything. Needs Debian's chromium + chromium-driver and
selenium (FAILS with the install line otherwise, as the dashboard browser test does).
Screenshots go to ``tests/artifacts/dashboard-<view>.png`` and, when
``BREADCRUMB_DASHBOARD_SHOTS`` names a directory, there too (docs/img is made that way).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, wait_until
from tests.e2e.test_dashboard_browser import _until, browser  # noqa: F401  (fixture by name)
from tests.support.memview import add_keys, bearer, changed_value, event, small_sessions
from tests.support.serve import serving

ARTIFACTS = ROOT / "tests" / "artifacts"
QUESTION = "which DB_PORT do we use now?"


def _events(user: str) -> list[dict[str, Any]]:
    return changed_value(user) + small_sessions(user, 3) + [
        event(user, "open-thread", 0, "message", "Set the retry limit to 5 in worker.py.", 21),
        event(user, "open-thread", 1, "session_end", "end", 21),
        event(user, "open-thread", 2, "message", "Still typing this one.", 21),
        event(user, "open-thread", 3, "message", "And a second line.", 21)]


def _bad(user: str) -> dict[str, Any]:
    return {**event(user, "broken", 0, "message", "x"), "role": "robot"}


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[str]:
    with serving(tmp_path) as url:
        yield url


def _settled(url: str, headers: dict[str, str] | None = None) -> None:
    wait_until(lambda: httpx.get(f"{url}/v1/stats", headers=headers).json()["unprocessed"] == 0,
               timeout=60)


def _shot(driver: Any, name: str, selector: str | None = None) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"dashboard-{name}.png"
    if selector:
        driver.execute_script("document.querySelector(arguments[0]).scrollIntoView()", selector)
    else:
        driver.execute_script("window.scrollTo(0, 0)")
    assert driver.save_screenshot(str(path)) and path.stat().st_size > 10_000
    extra = os.environ.get("BREADCRUMB_DASHBOARD_SHOTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, Path(extra) / path.name)


def _js(driver: Any, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)


def _go(driver: Any, fragment: str) -> None:
    _js(driver, "location.hash = arguments[0]", fragment)


def _tenant(driver: Any, user: str) -> None:
    _js(driver, "const t = document.getElementById('tenant'); t.value = arguments[0];"
                "t.dispatchEvent(new Event('change'))", user)


def _text(driver: Any, selector: str) -> str:
    return str(_js(driver, "const n = document.querySelector(arguments[0]);"
                           "return n ? n.textContent : ''", selector))


def _count(driver: Any, selector: str) -> int:
    return int(_js(driver, "return document.querySelectorAll(arguments[0]).length", selector))


def _fill(driver: Any, selector: str, value: str) -> None:
    from selenium.webdriver.common.by import By

    field = driver.find_element(By.CSS_SELECTOR, selector)
    field.clear()
    field.send_keys(value)


def _click(driver: Any, selector: str) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.CSS_SELECTOR, selector).click()


def _ids(url: str, user: str, headers: dict[str, str] | None = None) -> set[str]:
    page = httpx.get(f"{url}/v1/memories", params={"user_id": user, "limit": 200},
                     headers=headers).json()
    return {m["id"] for m in page["memories"]}


def _open_ready(driver: Any, url: str, fragment: str = "") -> None:
    """A fresh page load (a new query string: a changed fragment alone would not reload)."""
    loads = int(_js(driver, "return window.name.length") or 0) if driver.current_url.startswith(
        "http") else 0
    driver.get(f"{url}/dashboard?load={loads}{fragment}")
    _js(driver, "window.name += 'x'")
    _until(driver, lambda d: _js(d, "return document.body.dataset.ready") == "true", "the views")


def _search_open_source(driver: Any) -> None:
    """Memories → recall → open the best memory → its Source has the line marked."""
    _go(driver, "#/memories")
    _fill(driver, "#recall-query", QUESTION)
    _click(driver, "#recall-form button")
    _until(driver, lambda d: _count(d, "#recall-results tbody tr") >= 1, "recall results")
    assert "exact_value_needed" in _text(driver, "#recall-status")
    _click(driver, "#recall-results tbody tr a")
    _until(driver, lambda d: _js(d, "return document.body.dataset.memoryLoaded"), "the memory")
    _until(driver, lambda d: _count(d, "#src-events mark") >= 1, "a marked source line")
    assert _text(driver, "#src-events mark") == "+DB_PORT=6432"
    assert _text(driver, "#m-summary").startswith("Route the database through pgbouncer")
    marked = _js(driver, "return document.querySelector('#src-events li.matched').dataset.index")
    assert marked == "1"  # the file_edit event of the pgbouncer session
    # the supersession chain of the changed value: 5432 superseded, then 6432 current
    _until(driver, lambda d: "env:DB_PORT" in _text(d, "#m-facts"), "the fact versions")
    row = _text(driver, '#m-facts tr[data-key="env:DB_PORT"]')
    assert "5432 (superseded)" in row and "6432 (current)" in row
    assert row.index("5432") < row.index("6432")
    assert "if unused" in _text(driver, "#m-ttl") or "next sweep" in _text(driver, "#m-ttl")


def _change_tier(driver: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.CSS_SELECTOR, "#m-change select[name=tier]")) \
        .select_by_visible_text("confirmed")
    _fill(driver, "#m-change input[name=reason]", "checked by hand on the dashboard")
    _click(driver, "#m-change button[type=submit]")


def test_views_without_keys(served: str, browser: Any) -> None:  # noqa: F811
    url = served
    assert httpx.post(f"{url}/v1/events", json={"events": _events("u1")}).status_code == 202
    assert httpx.post(f"{url}/v1/events", json={"events": _events("u2")}).status_code == 202
    _settled(url)
    _open_ready(browser, url, "#/memories")
    _tenant(browser, "u1")
    _until(browser, lambda d: _count(d, "#mem-list tbody tr") == len(_ids(url, "u1")),
           "every memory of u1")
    _js(browser, "document.querySelector('#mem-list tbody tr').dataset.marker = 'kept'")
    late = [event("u1", "late-task", 0, "message", "Bump the retry limit to 7.", 28),
            event("u1", "late-task", 1, "session_end", "end", 28)]
    assert httpx.post(f"{url}/v1/events", json={"events": late}).status_code == 202
    _until(browser, lambda d: _count(d, "#mem-list tbody tr.fresh") == 1, "the new memory live")
    assert "retry limit" in _text(browser, "#mem-list tbody tr.fresh")
    assert _count(browser, "#mem-list tbody tr[data-marker=kept]") == 1  # not re-rendered
    _shot(browser, "memories")

    _search_open_source(browser)
    _change_tier(browser)
    _until(browser, lambda d: "checked by hand" in _text(d, "#m-audit"), "the audit row")
    audit = _text(browser, "#m-audit tbody tr:last-child")
    assert "tier" in audit and "provisional" in audit and "confirmed" in audit
    assert "dashboard" in audit
    assert _text(browser, "#m-badges").count("confirmed") == 1
    _shot(browser, "memory")
    _shot(browser, "source", "#m-audit")

    _go(browser, "#/inspect")
    _fill(browser, "#i-query", QUESTION)
    _click(browser, "#i-form button")
    _until(browser, lambda d: _js(d, "return document.body.dataset.inspected") == "1", "inspect")
    assert _count(browser, "#i-timings .stage") == 6
    assert _count(browser, "#i-cands tbody tr") >= 2
    assert "exact_value_needed" in _text(browser, "#i-decide")
    assert _count(browser, "#i-ranges tbody tr") >= 1
    assert "+DB_PORT=6432" in _text(browser, "#i-evidence")
    assert "of 800 tokens" in _text(browser, "#i-budget-used")
    _shot(browser, "inspector")

    _go(browser, "#/thread/open-thread")
    _until(browser, lambda d: _count(d, "#t-events li.in-open") == 2, "the open window")
    assert _count(browser, "#t-events li.in-window") == 2  # the closed session's memory
    more = event("u1", "open-thread", 4, "message", "A third line arrives.", 21)
    assert httpx.post(f"{url}/v1/events", json={"events": [more]}).status_code == 202
    _until(browser, lambda d: _count(d, "#t-events li.in-open") == 3, "the open window grow")
    assert _count(browser, "#t-events li") == 5
    assert "A third line arrives." in _text(browser, "#t-events li:last-child")
    _shot(browser, "thread")

    assert httpx.post(f"{url}/v1/events", json={"events": [_bad("u1")]}).status_code == 422
    _go(browser, "#/dead")
    _until(browser, lambda d: _count(d, "#d-list tbody tr") == 1, "the dead letter")
    row = _text(browser, "#d-list tbody tr")
    assert "role" in row and "u1-broken-0" in row
    assert _text(browser, "#d-list tbody tr .position")  # log:<seq> or a topic position
    _click(browser, "#d-list tbody tr .redrive button")  # still invalid: refused, said why
    _until(browser, lambda d: "422" in _text(d, "#d-list tbody tr .redrive"), "the re-drive")
    assert "role" in _text(browser, "#d-list tbody tr .redrive")
    _shot(browser, "dead-letters")
    # a row opens its letter: every field, the whole payload, the re-drive (issue 47)
    letter = _js(browser, "return document.querySelector('#d-list tbody tr').dataset.id")
    _click(browser, "#d-list tbody tr .reason")
    _until(browser, lambda d: _js(d, "return document.body.dataset.letterOpen") == letter,
           "the dead letter's view")
    assert _js(browser, "return location.hash") == f"#/dead/{letter}"
    assert "role" in _text(browser, '#d-fields dd[data-field="reason"]')
    assert _text(browser, '#d-fields dd[data-field="tenant"]') == "u1"
    assert '"event_id": "u1-broken-0"' in _text(browser, "#d-payload")  # whole, indented
    assert _count(browser, "#d-fields .redrive button") == 1
    _js(browser, "location.reload()")  # opened by its address
    _until(browser, lambda d: _js(d, "return document.body.dataset.letterOpen") == letter,
           "the dead letter by its address")
    _go(browser, "#/dead/99999")
    _until(browser, lambda d: "No dead letter 99999" in _text(d, "#d-detail-status"),
           "the missing letter")
    assert not _text(browser, "#d-payload") and _count(browser, "#d-fields dd") == 0

    target = next(m for m in httpx.get(f"{url}/v1/memories", params={
        "user_id": "u1", "thread": "task-00"}).json()["memories"])
    _go(browser, f"#/memory/{target['id']}")
    _until(browser, lambda d: _js(d, "return document.body.dataset.memoryLoaded") == target["id"],
           "the memory to forget")
    _click(browser, "#m-forget .forget-start")
    assert _js(browser, "return document.querySelector('#m-forget .forget-confirm').disabled")
    _fill(browser, "#m-forget .forget-word", "forget")
    _shot(browser, "forget")
    _click(browser, "#m-forget .forget-confirm")
    # issue 47: what was erased leaves the page; the status line says what was erased
    _until(browser, lambda d: "was forgotten: erased" in _text(d, "#m-status"), "the erasure")
    assert not _text(browser, "#m-summary") and not _text(browser, "#m-forget")
    gone = httpx.get(f"{url}/v1/memories/{target['id']}", params={"user_id": "u1"})
    assert gone.status_code == 404
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"
              and "/redrive - " not in e["message"]]  # the refused re-drive, explained above
    assert errors == [], errors


def test_views_with_keys(served: str, browser: Any) -> None:  # noqa: F811
    url = served
    keys = add_keys(_data_dir(url), [("u1", "admin"), ("u2", "reader")])
    admin = bearer(keys[("u1", "admin")])
    for user in ("u1", "u2"):
        body = {"events": [*_events(user), _bad(user)]}
        assert httpx.post(f"{url}/v1/events", json=body, headers=admin).status_code == 202
    _settled(url, admin)
    u1_ids, u2_ids = _ids(url, "u1", admin), _ids(url, "u2", admin)

    _open_ready(browser, url, f"#key={keys[('u2', 'reader')]}")
    assert _js(browser, "return document.getElementById('tenant').readOnly")
    assert _js(browser, "return document.getElementById('tenant').value") == "u2"
    assert "reader key" in _text(browser, "#whoami")
    _go(browser, "#/memories")
    _until(browser, lambda d: _count(d, "#mem-list tbody tr") == len(u2_ids), "u2's memories")
    shown = set(_js(browser, "return [...document.querySelectorAll('#mem-list tbody tr')]"
                             ".map(r => r.dataset.id)"))
    assert shown == u2_ids and not shown & u1_ids

    _search_open_source(browser)
    memory_id = _js(browser, "return document.body.dataset.memoryLoaded")
    assert memory_id in u2_ids
    _change_tier(browser)
    _until(browser, lambda d: "Not allowed" in _text(d, "#m-change-status"), "the refusal")
    assert "403" in _text(browser, "#m-change-status")
    assert "reader" in _text(browser, "#m-change-status")
    _click(browser, "#m-forget .forget-start")
    _fill(browser, "#m-forget .forget-word", "forget")
    _click(browser, "#m-forget .forget-confirm")
    _until(browser, lambda d: "Not allowed" in _text(d, "#m-forget"), "the forget refusal")
    after = httpx.get(f"{url}/v1/memories/{memory_id}", params={"user_id": "u2"}, headers=admin)
    assert after.status_code == 200 and after.json()["tier"] == "provisional"
    audit = httpx.get(f"{url}/v1/memories/{memory_id}/audit", params={"user_id": "u2"},
                      headers=admin).json()
    assert audit == []
    _shot(browser, "reader-refused")

    _go(browser, "#/dead")
    _until(browser, lambda d: _count(d, "#d-list tbody tr") >= 1, "u2's dead letter")
    letters = _text(browser, "#d-list tbody")
    assert "u2-broken-0" in letters and "u1-broken-0" not in letters
    _click(browser, "#d-list tbody tr .redrive button")
    _until(browser, lambda d: "Not allowed" in _text(d, "#d-list tbody tr .redrive"),
           "the reader's re-drive refused")
    _go(browser, "#/thread/db-setup")
    _until(browser, lambda d: _count(d, "#t-events li.in-window") == 3, "u2's thread windows")

    # an admin key changes the tier from the page: the audit row appears
    _js(browser, "sessionStorage.clear()")
    _open_ready(browser, url, f"#key={keys[('u1', 'admin')]}")
    _search_open_source(browser)
    _change_tier(browser)
    _until(browser, lambda d: "checked by hand" in _text(d, "#m-audit"), "the admin's audit row")
    assert "confirmed" in _text(browser, "#m-audit tbody tr:last-child")
    errors = [e for e in browser.get_log("browser")
              if e["level"] == "SEVERE" and " 403 " not in e["message"]]
    assert errors == [], errors  # the reader's refusals are 403 answers the page explains


def _data_dir(url: str) -> Path:
    return Path(httpx.get(f"{url}/healthz").json()["data_dir"])

"""Issue 47 in a real headless Chromium against a real ``breadcrumb serve``, without keys
and with keys: looking changes nothing (an inspector run and a search leave hits, last
use, the TTL's touch and tiers as they were), the page follows the user (a tenant switch
clears results and views, a 404 blanks the view and names what was not found, forget
removes what it erased, Forget's button names it), tenant discovery (``local`` without
keys, the admin's list), and a fact's history (a key changed twice in two threads, the
current value marked). Needs Debian's chromium + chromium-driver and selenium (FAILS with
the install line otherwise)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import wait_until
from tests.e2e.test_dashboard_browser import _until, browser  # noqa: F401  (fixture by name)
from tests.e2e.test_dashboard_explore_api import moved_again
from tests.e2e.test_dashboard_views import (
    _click,
    _count,
    _data_dir,
    _fill,
    _go,
    _js,
    _open_ready,
    _settled,
    _tenant,
    _text,
)
from tests.support.memview import add_keys, bearer, changed_value, small_sessions
from tests.support.serve import serving

QUESTION = "which DB_PORT do we use now?"


def explorer_events(user: str) -> list[dict[str, Any]]:
    """DB_PORT 5432 → 6432 → 7432 in three threads, and three small sessions."""
    return changed_value(user) + moved_again(user) + small_sessions(user, 3)


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[str]:
    with serving(tmp_path) as url:
        yield url


def _looked_at(url: str, user: str, headers: dict[str, str] | None = None
               ) -> dict[str, tuple[Any, ...]]:
    """Per memory: hits, last use, tier, status and the lifecycle's touch time."""
    page = httpx.get(f"{url}/v1/memories", params={"user_id": user, "limit": 200},
                     headers=headers).json()
    out = {}
    for m in page["memories"]:
        life = httpx.get(f"{url}/v1/dashboard/memories/{m['id']}/lifecycle",
                         params={"user_id": user}, headers=headers).json()
        out[m["id"]] = (m["hit_count"], m["last_used_at"], m["tier"], m["status"],
                        life.get("touched_at"))
    return out


def _inspect(driver: Any, question: str = QUESTION) -> None:
    runs = int(_js(driver, "return document.body.dataset.inspected || 0"))
    _go(driver, "#/inspect")
    _fill(driver, "#i-query", question)
    _click(driver, "#i-form button")
    _until(driver, lambda d: int(_js(d, "return document.body.dataset.inspected || 0")) > runs,
           "the inspector's answer")


def _search(driver: Any, question: str = QUESTION) -> None:
    _go(driver, "#/memories")
    _fill(driver, "#recall-query", question)
    _click(driver, "#recall-form button")
    _until(driver, lambda d: _count(d, "#recall-results tbody tr") >= 1, "search results")


def _read_only(driver: Any, url: str, user: str, headers: dict[str, str] | None = None) -> None:
    """Three inspector runs and three searches: nothing changes (uses are written within
    0.2 s: waited for well past that)."""
    before = _looked_at(url, user, headers)
    for _ in range(3):
        _inspect(driver)
        _search(driver)
    time.sleep(1.5)
    assert _looked_at(url, user, headers) == before


def _no_relevance(driver: Any) -> None:
    """The hash embedder reports no relevance (docs/recall.md): the search and the
    inspector rate nothing (the column stays hidden, nothing is dimmed, no "nothing
    matches" line), say it is not calibrated, and still show their answer."""
    shown = _js(driver, "return [...document.querySelectorAll('#recall-results .rel, "
                        "#i-cands .rel')].map(c => [c.tagName, c.textContent, "
                        "getComputedStyle(c).display])")
    assert shown and {s[2] for s in shown} == {"none"}, shown
    assert {s[1] for s in shown if s[0] == "TD"} == {"–"}
    assert _count(driver, "#recall-results.rated, #i-cands.rated, tr.weak") == 0
    lines = _text(driver, "#recall-status") + _text(driver, "#i-status") + _text(driver,
                                                                                 "#i-decide")
    assert "relevance not calibrated" in lines and "Nothing strong" not in _text(driver, "body")
    assert "relevance" not in lines.replace("relevance not calibrated", "")
    assert _count(driver, "#recall-results tbody tr") >= 1 and _count(driver,
                                                                      "#i-cands tbody tr") >= 1


def test_explorer_without_keys(served: str, browser: Any) -> None:  # noqa: F811
    url = served
    for user in ("u1", "u2"):
        body = {"events": explorer_events(user)}
        assert httpx.post(f"{url}/v1/events", json=body).status_code == 202
    _settled(url)

    # discovery: a keyless loopback server opens on `local` and offers the tenants it holds
    _open_ready(browser, url, "#/memories")
    assert _js(browser, "return document.getElementById('tenant').value") == "local"
    _until(browser, lambda d: "Tenant local holds nothing yet." in _text(d, "#mem-status"),
           "the empty state naming the tenant")
    offered = _js(browser, "return [...document.querySelectorAll('#tenants option')]"
                           ".map(o => o.value)")
    assert sorted(offered) == ["u1", "u2"]

    # looking is read-only: the inspector and the search leave hits, TTLs, tiers unchanged
    _tenant(browser, "u1")
    _read_only(browser, url, "u1")
    assert "+DB_PORT=7432" in _text(browser, "#recall-results tbody tr .answer")  # the line
    _no_relevance(browser)  # not computed under the hash embedder: none shown, no error

    # a recent recall (an agent's) opens in the inspector, which runs it as a look
    agent = {"user_id": "u1", "query": "what did we rename in module m1.py?"}
    quiet = _looked_at(url, "u1")
    assert httpx.post(f"{url}/v1/recall", json=agent).status_code == 200
    # the agent's recall is a use; its hits are written off the answer's path (usage.py)
    wait_until(lambda: _looked_at(url, "u1") != quiet, timeout=30)
    _tenant(browser, "u2")
    _go(browser, "#/live")
    _until(browser, lambda d: _count(d, "#recalls tbody tr[data-query]") >= 1, "the recall")
    assert "every tenant" in _text(browser, "#recalls-scope")
    before = _looked_at(url, "u1")
    runs = int(_js(browser, "return document.body.dataset.inspected || 0"))
    _click(browser, "#recalls tbody tr[data-query]")
    _until(browser, lambda d: int(_js(d, "return document.body.dataset.inspected || 0")) > runs,
           "the recall in the inspector")
    assert _js(browser, "return document.getElementById('i-query').value") == agent["query"]
    assert _js(browser, "return document.getElementById('tenant').value") == "u1"
    time.sleep(1.5)
    assert _looked_at(url, "u1") == before
    _go(browser, "#/live")
    _click(browser, "#card-dead")
    _until(browser, lambda d: _js(d, "return location.hash") == "#/dead", "the dead letters")

    # a tenant switch clears the results and the open views
    _search(browser)
    _tenant(browser, "nobody")
    _until(browser, lambda d: "Tenant nobody holds nothing yet." in _text(d, "#mem-status"),
           "the new tenant's empty list")
    assert _js(browser, "return document.getElementById('recall-results').hidden")
    assert _count(browser, "#recall-results tbody tr") == 0 and not _text(browser,
                                                                          "#recall-status")
    _go(browser, "#/inspect")
    assert _js(browser, "return document.getElementById('i-out').hidden")
    assert _count(browser, "#i-cands tbody tr") == 0
    _tenant(browser, "u1")
    _search(browser)
    _click(browser, "#recall-results tbody tr a")
    _until(browser, lambda d: _js(d, "return document.body.dataset.memoryLoaded"), "a memory")
    memory_id = _js(browser, "return document.body.dataset.memoryLoaded")
    _tenant(browser, "u2")  # the open memory is u1's: the view goes back to the list
    _until(browser, lambda d: _js(d, "return location.hash") == "#/memories", "the list")
    assert not _text(browser, "#m-summary") and not _text(browser, "#m-forget")
    assert not _text(browser, "#src-events")

    # a 404 blanks the view and says what was not found (u1's id under u2 is not found)
    _go(browser, f"#/memory/{memory_id}")
    _until(browser, lambda d: "(404)" in _text(d, "#m-status"), "the 404")
    status = _text(browser, "#m-status")
    assert memory_id in status and "tenant u2" in status
    assert not _text(browser, "#m-summary") and _count(browser, "#m-forget button") == 0
    assert _js(browser, "return document.getElementById('view-memory').dataset.empty") == "true"
    _go(browser, "#/thread/never-there")
    _until(browser, lambda d: "(404)" in _text(d, "#t-status"), "the thread's 404")
    assert "never-there" in _text(browser, "#t-status") and _count(browser, "#t-events li") == 0

    # a fact's history: reachable from a memory's exact values and from the search
    _tenant(browser, "u1")
    _search(browser)
    _until(browser, lambda d: "env:DB_PORT" in _text(d, "#recall-facts"), "the fact link")
    _click(browser, "#recall-results tbody tr a")
    _until(browser, lambda d: _count(d, '#m-facts tr[data-key="env:DB_PORT"] a.fact-link') == 1,
           "the memory's fact link")
    _click(browser, '#m-facts tr[data-key="env:DB_PORT"] a.fact-link')
    _until(browser, lambda d: _js(d, "return document.body.dataset.factLoaded") ==
           "env:DB_PORT", "the fact's history")
    steps = _js(browser, "return [...document.querySelectorAll('#f-list .fact-step')]"
                         ".map(s => [s.dataset.value, s.dataset.current, s.textContent])")
    assert [s[0] for s in steps] == ["5432", "6432", "7432"]
    assert [s[1] for s in steps] == ["false", "false", "true"]
    assert "db-setup" in steps[0][2] and "pgbouncer" in steps[1][2] and "db-move" in steps[2][2]
    assert "superseded by 6432" in steps[0][2] and "superseded by 7432" in steps[1][2]
    assert "now 7432" in _text(browser, "#f-current")

    # forget names what it erases and removes it from the page
    _go(browser, "#/thread/task-00")
    _until(browser, lambda d: _js(d, "return document.body.dataset.threadLoaded") == "task-00",
           "the thread")
    assert _count(browser, "#t-events li") == 3
    label = _text(browser, "#t-forget .forget-start")
    assert "task-00" in label and "3 events" in label and "1 memories" in label
    assert "Rename the helper number 0" in _text(browser, "#t-head")  # titled by its request
    _click(browser, "#t-forget .forget-start")
    _fill(browser, "#t-forget .forget-word", "forget")
    _click(browser, "#t-forget .forget-confirm")
    _until(browser, lambda d: "was forgotten" in _text(d, "#t-status"), "the erasure")
    assert _count(browser, "#t-events li") == 0 and not _text(browser, "#t-head")

    target = httpx.get(f"{url}/v1/memories", params={"user_id": "u1", "thread": "task-01"}
                       ).json()["memories"][0]
    _go(browser, "#/memories")
    _until(browser, lambda d: _count(d, f'#mem-list tr[data-id="{target["id"]}"]') == 1,
           "the memory in the list")
    _go(browser, f"#/memory/{target['id']}")
    _until(browser, lambda d: _js(d, "return document.body.dataset.memoryLoaded") ==
           target["id"], "the memory to forget")
    label = _text(browser, "#m-forget .forget-start")
    assert "Rename the helper number 1" in label and "3 source event(s)" in label
    _click(browser, "#m-forget .forget-start")
    _fill(browser, "#m-forget .forget-word", "forget")
    _click(browser, "#m-forget .forget-confirm")
    _until(browser, lambda d: "was forgotten" in _text(d, "#m-status"), "the erasure")
    assert not _text(browser, "#m-summary") and not _text(browser, "#src-events")
    _go(browser, "#/memories")
    _until(browser, lambda d: _count(d, "#mem-list tbody tr") >= 1, "the list")
    assert _count(browser, f'#mem-list tr[data-id="{target["id"]}"]') == 0
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"
              and " 404 " not in e["message"]]  # the 404s above, explained on the page
    assert errors == [], errors


def test_explorer_with_keys(served: str, browser: Any) -> None:  # noqa: F811
    url = served
    keys = add_keys(_data_dir(url), [("u1", "admin"), ("u2", "reader")])
    admin = bearer(keys[("u1", "admin")])
    for user in ("u1", "u2"):
        body = {"events": explorer_events(user)}
        assert httpx.post(f"{url}/v1/events", json=body, headers=admin).status_code == 202
    _settled(url, admin)

    # a reader: its own tenant, fixed; looking changes nothing; another tenant's id is 404
    _open_ready(browser, url, f"#key={keys[('u2', 'reader')]}")
    assert _js(browser, "return document.getElementById('tenant').value") == "u2"
    _read_only(browser, url, "u2", admin)
    u1_memory = httpx.get(f"{url}/v1/memories", params={"user_id": "u1"},
                          headers=admin).json()["memories"][0]["id"]
    _go(browser, f"#/memory/{u1_memory}")
    _until(browser, lambda d: "(404)" in _text(d, "#m-status"), "the other tenant's 404")
    assert not _text(browser, "#m-summary")
    _go(browser, "#/fact/env:DB_PORT")
    _until(browser, lambda d: _count(d, "#f-list .fact-step") == 3, "u2's fact history")
    assert _count(browser, '#f-list .fact-step[data-current="true"]') == 1

    # an admin: picks from the tenants the service holds; a switch clears the views
    _js(browser, "sessionStorage.clear()")
    _open_ready(browser, url, f"#key={keys[('u1', 'admin')]}")
    offered = _js(browser, "return [...document.querySelectorAll('#tenants option')]"
                           ".map(o => o.value)")
    assert sorted(offered) == ["u1", "u2"]
    assert _js(browser, "return document.getElementById('tenant').value") == "u1"
    _read_only(browser, url, "u1", admin)
    _tenant(browser, "u2")
    _go(browser, "#/memories")
    _until(browser, lambda d: _count(d, "#mem-list tbody tr") >= 1, "u2's list")
    assert _count(browser, "#recall-results tbody tr") == 0
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"
              and " 404 " not in e["message"]]
    assert errors == [], errors

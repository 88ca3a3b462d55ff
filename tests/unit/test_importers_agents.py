"""Importers of the other agents (Gemini CLI, OpenCode, Cline / Roo, Copilot CLI, Cursor,
SpecStory, Aider) and today's Claude Code / Codex records, on fixtures in each real format."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.importers import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    import_file,
    import_path,
    import_records,
    transcripts_in,
)
from breadcrumb.processors.validate import Rejection, validate_event

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
GEMINI_JSON = FIXTURES / "gemini/json/session-2025-10-14T09-02-3bacc8a0.json"
GEMINI_CHATS = FIXTURES / "gemini/jsonl/chats"
GEMINI_ID = "6f1d2c3b-8a4e-4b7d-9c2e-51a0b3d4e5f6"
GEMINI_JSONL = GEMINI_CHATS / "session-2026-05-22T14-59-6f1d2c3b.jsonl"
GEMINI_SUB = GEMINI_CHATS / GEMINI_ID / "8e7d6c5b-4a3f-4e2d-8c1b-0a9f8e7d6c5b.jsonl"
OPENCODE_EXPORT = FIXTURES / "opencode/opencode-export-ses_5d1c9a2e.json"
OPENCODE_SQL = FIXTURES / "opencode/opencode-store.sql"
OPENCODE_ID, OPENCODE_CHILD = "ses_5d1c9a2e7ffeQk3Rm8Lp0Tz5Wb", "ses_5d1c97b01ffeA2xY7nP4qR6sTu"
CLINE_TASK = FIXTURES / "cline/cline-3.17/tasks/1733221234567"
CLINE = CLINE_TASK / "api_conversation_history.json"
CLINE_UI = CLINE_TASK / "ui_messages.json"
ROO = FIXTURES / ("cline/roo-3.30/tasks/0199a4c2-5b7e-7d10-9f3a-2c4e6a8b0d1f/"
                  "api_conversation_history.json")
COPILOT_OLD = FIXTURES / ("copilot/0.0.369/session-state/2f4e6a8c-0b1d-4f3e-9a5c-7e9b1d3f5a7c/"
                          "events.jsonl")
COPILOT_NEW = FIXTURES / ("copilot/1.0.12/session-state/7b9d1f3a-5c7e-4a9b-8d0f-2a4c6e8b0d2f/"
                          "events.jsonl")
CURSOR_DIR = FIXTURES / "cursor/agent-transcripts/3e5a7c9b-1d2f-4a6b-8c0d-e2f4a6b8c0d1"
CURSOR = CURSOR_DIR / "3e5a7c9b-1d2f-4a6b-8c0d-e2f4a6b8c0d1.jsonl"
CURSOR_SUB = CURSOR_DIR / "subagents/9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d.jsonl"
SPECSTORY_V1 = FIXTURES / ("specstory/v1/.specstory/history/"
                           "2025-03-02_10-14-fix-the-flaky-retry-test.md")
SPECSTORY_V2 = FIXTURES / "specstory/v2.1/.specstory/history/2026-07-13_13-40-49Z-smoke-check.md"
AIDER = FIXTURES / "aider/weather-cli/.aider.chat.history.md"
CLAUDE_ID = "0f3e9b2a-6c4d-4e8f-a1b2-7c9d0e1f2a3b"
CLAUDE = FIXTURES / f"claude-code-2.1.2xx/{CLAUDE_ID}.jsonl"
CLAUDE_SUB = FIXTURES / f"claude-code-2.1.2xx/{CLAUDE_ID}/subagents/agent-b7e2c91.jsonl"
CODEX = FIXTURES / ("codex-0.14x-exec/"
                    "rollout-2026-10-02T08-00-00-019fb2c4-7d1e-7a3b-9c5d-1e2f3a4b5c6d.jsonl")
OPTIONS = ImportOptions(user_id="u1")

#: file, format, events per kind (session_end included; a note per settings the session names
#: where first said or changed: :func:`test_sessions_name_what_they_ran_with`), unknown
#: records kept as notes
TABLE: list[tuple[Path, str, dict[str, int], int]] = [
    (GEMINI_JSON, "gemini", {"file_edit": 2, "message": 4, "note": 3, "session_end": 1,
                             "test_result": 2, "tool_call": 2, "tool_result": 2}, 1),
    (GEMINI_JSONL, "gemini", {"file_edit": 1, "message": 3, "note": 6, "session_end": 1,
                              "tool_call": 1, "tool_result": 2}, 1),
    (GEMINI_SUB, "gemini", {"message": 2, "note": 2, "session_end": 1, "tool_call": 1,
                            "tool_result": 1}, 0),
    (OPENCODE_EXPORT, "opencode", {"file_edit": 1, "message": 2, "note": 3, "session_end": 1,
                                   "test_result": 2, "tool_call": 4, "tool_result": 2}, 1),
    (CLINE, "cline", {"file_edit": 1, "message": 3, "note": 3, "session_end": 1,
                      "test_result": 2, "tool_call": 3, "tool_result": 1}, 0),
    (CLINE_UI, "cline-ui", {"file_edit": 1, "message": 3, "note": 1, "session_end": 1,
                            "test_result": 2, "tool_call": 2}, 1),
    (ROO, "cline", {"file_edit": 1, "message": 2, "note": 2, "session_end": 1,
                    "test_result": 1, "tool_call": 1, "tool_result": 1}, 0),
    (COPILOT_OLD, "copilot", {"file_edit": 1, "message": 3, "note": 6, "session_end": 2,
                              "test_result": 1, "tool_call": 3, "tool_result": 3}, 1),
    (COPILOT_NEW, "copilot", {"file_edit": 1, "message": 2, "note": 4, "session_end": 2,
                              "tool_call": 1, "tool_result": 2}, 0),
    (CURSOR, "cursor", {"file_edit": 2, "message": 4, "note": 2, "session_end": 1,
                        "tool_call": 2}, 1),
    (CURSOR_SUB, "cursor", {"message": 2, "session_end": 1, "tool_call": 1}, 0),
    (SPECSTORY_V1, "specstory", {"message": 3, "note": 1, "session_end": 1, "test_result": 1,
                                 "tool_call": 2}, 0),
    (SPECSTORY_V2, "specstory", {"file_edit": 1, "message": 3, "note": 2, "session_end": 1,
                                 "tool_call": 1, "tool_result": 1}, 0),
    (CLAUDE, "claude-code", {"file_edit": 1, "message": 2, "note": 8, "session_end": 1,
                             "test_result": 1, "tool_call": 2, "tool_result": 2}, 1),
    (CLAUDE_SUB, "claude-code", {"message": 2, "note": 2, "session_end": 1, "tool_call": 1,
                                 "tool_result": 1}, 0),
    (CODEX, "codex", {"file_edit": 1, "message": 2, "note": 5, "session_end": 1,
                      "test_result": 1, "tool_call": 1, "tool_result": 1}, 2),
]


def opencode_store(folder: Path, sql: str | None = None) -> Path:
    """The SQLite store the fixture's SQL describes (as ``opencode.db``)."""
    path = folder / "opencode.db"
    with sqlite3.connect(path) as db:
        db.executescript(sql if sql is not None else OPENCODE_SQL.read_text("utf-8"))
    return path


def _kinds(result: ImportResult) -> dict[str, int]:
    return dict(Counter(e["kind"] for e in result.events))


def _only(path: Path, fmt: str = "auto") -> ImportResult:
    return import_file(path, fmt, OPTIONS)


@pytest.mark.parametrize(("path", "fmt", "kinds", "unknown"), TABLE,
                         ids=[str(t[0].relative_to(FIXTURES)) for t in TABLE])
def test_counts_per_kind_contract_and_auto_format(path: Path, fmt: str, kinds: dict[str, int],
                                                  unknown: int) -> None:
    result = _only(path)
    assert result.fmt == fmt
    assert _kinds(result) == kinds
    assert sum(result.unknown.values()) == unknown
    notes = [e for e in result.events if e.get("attrs", {}).get("unknown_record")]
    assert len(notes) == unknown  # every unknown record is a note, none dropped
    assert [(e, r.message()) for e in result.events
            if isinstance(r := validate_event(e), Rejection)] == []
    assert len({e["event_id"] for e in result.events}) == len(result.events)
    assert [e["event_id"] for e in _only(path, fmt).events] == [
        e["event_id"] for e in result.events]  # the format named or recognised: the same


@pytest.mark.parametrize(("path", "fmt"), [(t[0], t[1]) for t in TABLE],
                         ids=[str(t[0].relative_to(FIXTURES)) for t in TABLE])
def test_ids_stable_across_reimports_and_renames(path: Path, fmt: str, tmp_path: Path) -> None:
    first = [e["event_id"] for e in _only(path).events]
    assert [e["event_id"] for e in _only(path).events] == first
    copy = tmp_path / ("renamed" + "".join(path.suffixes))
    shutil.copy(path, copy)
    if fmt not in ("gemini", "cursor", "cline"):  # these read their folder (parent, task)
        assert [e["event_id"] for e in _only(copy).events] == first
    other = [e["event_id"] for e in import_file(path, "auto", ImportOptions("u2")).events]
    assert not set(first) & set(other)


def _results(result: ImportResult) -> list[tuple[str, int | None]]:
    return [(e["kind"], e["attrs"].get("exit_code")) for e in result.events
            if e["kind"] in ("tool_result", "test_result") and "command" in e.get("attrs", {})]


def test_shell_results_carry_their_exit_codes() -> None:
    assert _results(_only(GEMINI_JSON)) == [("test_result", 101), ("test_result", 0)]
    assert _results(_only(OPENCODE_EXPORT)) == [("test_result", 1), ("test_result", 0)]
    assert _results(_only(CLINE)) == [("test_result", 1), ("test_result", 0)]
    assert _results(_only(ROO)) == [("test_result", 1)]
    assert _results(_only(COPILOT_OLD)) == [("test_result", 1)]
    assert _results(_only(COPILOT_NEW)) == [("tool_result", 0)]  # `just smoke`
    assert _results(_only(CLAUDE)) == [("test_result", 0)]
    assert _results(_only(CODEX)) == [("test_result", 0)]
    failed = next(e for e in _only(GEMINI_JSON).events if e["kind"] == "test_result")
    assert "test result: FAILED. 13 passed; 1 failed" in failed["content"]
    assert failed["attrs"]["command"] == "cargo test --quiet" and failed["attrs"]["is_error"]


def _edits(path: Path) -> str:
    return "\n".join(e["content"] for e in _only(path).events if e["kind"] == "file_edit")


@pytest.mark.parametrize(("path", "line"), [
    (GEMINI_JSON, 'rust-version = "1.85"'),
    (GEMINI_JSONL, '\tAllowedOrigins: []string{"http://localhost:3000", "http://localhost:5173"},'),
    (OPENCODE_EXPORT, "+export const API_TIMEOUT_MS = 15000"),
    (CLINE, "  res.status(200).json({ status: 'ok' });"),
    (ROO, '    "better-sqlite3": "11.10.0",'),
    (COPILOT_OLD, "\treturn t.In(loc).Format(time.DateOnly)"),
    (COPILOT_NEW, "+  <title>Acme Billing — Invoices</title>"),
    (CURSOR, "  return hash.replace(/^#\\//, '') || 'all';"),
    (SPECSTORY_V2, '+HEALTH_URL="https://staging.acme.test/api/healthz"'),
    (AIDER, '    parser.add_argument("--units", choices=["metric", "imperial"], '
            'default="metric")'),
    (CLAUDE, 'channel = "1.85"'),
    (CODEX, '+    "limits==4.0.1",'),
], ids=lambda v: v.name if isinstance(v, Path) else "")
def test_edits_keep_their_lines_verbatim_and_unescaped(path: Path, line: str) -> None:
    edits = _edits(path)
    assert line in edits.splitlines()
    assert '\\"' not in edits.replace('\\\\"', "") and "\\n" not in edits.replace("\\\\", "")


def test_subagents_are_threads_of_their_own_linked_to_their_parent(tmp_path: Path) -> None:
    for path, parent in ((COPILOT_OLD, "2f4e6a8c-0b1d-4f3e-9a5c-7e9b1d3f5a7c"),
                         (COPILOT_NEW, "7b9d1f3a-5c7e-4a9b-8d0f-2a4c6e8b0d2f")):
        result = _only(path)
        main, sub = result.threads
        assert main == parent and sub.startswith(f"{parent}/agent-")
        assert {e["attrs"]["parent_thread_id"] for e in result.events
                if e["thread_id"] == sub} == {parent}
    assert _links(_only(GEMINI_SUB)) == {GEMINI_ID}
    assert _only(GEMINI_JSONL).threads == [GEMINI_ID]
    assert _links(_only(CLAUDE_SUB)) == {CLAUDE_ID}
    assert _links(_only(CURSOR_SUB)) == set(_only(CURSOR).threads)
    child, = [r for r in import_path(opencode_store(tmp_path), "auto", OPTIONS)
              if r.threads == [OPENCODE_CHILD]]
    assert _links(child) == {OPENCODE_ID}
    task = next(e for e in _only(OPENCODE_EXPORT).events
                if e["kind"] == "tool_result" and e.get("tool") == "task")
    assert task["attrs"]["child_thread_id"] == OPENCODE_CHILD


def _links(result: ImportResult) -> set[str]:
    return {e.get("attrs", {}).get("parent_thread_id") for e in result.events}


def test_the_opencode_store_and_its_export_give_the_same_events(tmp_path: Path) -> None:
    results = import_path(opencode_store(tmp_path), "auto", OPTIONS)
    assert [r.threads for r in results] == [[OPENCODE_ID], [OPENCODE_CHILD]]
    exported = _only(OPENCODE_EXPORT).events
    assert [e["event_id"] for e in results[0].events] == [e["event_id"] for e in exported]
    assert [e["content"] for e in results[0].events][:-1] == [e["content"] for e in exported][:-1]
    assert results[0].fmt == "opencode" and results[0].events[0]["project_id"] == "shop-web"


def test_gemini_jsonl_reappended_messages_add_only_what_is_new() -> None:
    events = _only(GEMINI_JSONL).events
    calls = [e for e in events if e["kind"] == "tool_call"]
    assert [c["content"] for c in calls] == [
        "curl -si -X OPTIONS http://localhost:8080/api/reports -H 'Origin: http://localhost:5173'"]
    assert sum("403 Forbidden" in e["content"] for e in events) == 1
    notes = [e["content"] for e in events if e["kind"] == "note"]
    assert "rewound to message c3f2e4d6-5b7a-4c8f-8e9d-1a2b3c4d5e6f" in notes
    assert "Fix the CORS preflight for the dashboard dev server" in notes
    assert events[0]["project_id"] == "reports"  # from ~/.gemini/tmp/<slug>/.project_root
    cors = "has been blocked by CORS policy: Response to preflight request doesn't pass"
    assert any(cors in e["content"] for e in events if e["kind"] == "message")


def test_claude_2_1_2xx_records_are_notes_and_session_facts() -> None:
    result = _only(CLAUDE)
    notes = [e["content"] for e in result.events if e["kind"] == "note"
             and "session_settings" not in e.get("attrs", {})]
    assert notes[:2] == ["bridge session: cse_01W9MQGReWS44CBjcm2YqFrL",
                         "file history: rust-toolchain.toml (version 1)"]
    assert "title: toolchain 1.85" in notes and "agent name: rates-upgrade" in notes
    assert "pull request: #297 https://github.com/acme/rates-rs/pull/297" in notes
    assert result.unknown == Counter({"record type artifact-quantum-ledger": 1})
    assert result.skipped["record type last-prompt"] == 1
    assert result.events[-1]["attrs"]["session"] == {
        "custom-title": "toolchain 1.85", "agent-name": "rates-upgrade"}


def test_codex_exec_from_another_provider_keeps_its_session_metadata() -> None:
    result = _only(CODEX)
    assert result.events[-1]["attrs"]["session"] == {
        "originator": "codex_exec", "cli_version": "0.143.0", "model_provider": "openrouter",
        "source": "exec"}
    assert set(result.unknown) == {"item type web_search_call", "record type exec_telemetry"}
    compacted = [e for e in result.events if e.get("attrs", {}).get("compacted")]
    assert compacted[0]["content"].startswith("Python 3.12 required")


def test_cline_threads_come_from_the_task_not_the_file_name(tmp_path: Path) -> None:
    assert _only(CLINE).threads == _only(CLINE_UI).threads == ["cline-task-1733221234570"]
    roo = _only(ROO)  # Roo's history_item.json: the task's own id and its parent task
    assert roo.threads == ["0199a4c2-5b7e-7d10-9f3a-2c4e6a8b0d1f"]
    assert _links(roo) == {"0199a4b8-1e2f-7a3b-8c4d-5e6f7a8b9c0d"}
    assert roo.events[0]["project_id"] == "notes-api"
    alone = tmp_path / "api_conversation_history.json"
    shutil.copy(CLINE, alone)  # no ui_messages.json beside it: a digest of its first message
    thread = _only(alone).threads[0]
    assert thread.startswith("import-")
    messages = json.loads(CLINE.read_text("utf-8"))
    alone.write_text(json.dumps(messages[:3]), "utf-8")  # the same task, earlier
    assert _only(alone).threads == [thread]
    first = _only(CLINE).events[0]
    assert first["content"].startswith("<task>\nThe health check returns 500")


def test_cline_native_edits_name_their_file(tmp_path: Path) -> None:
    # Cline 3.x native tool_use: write_to_file / replace_in_file name the file absolutePath
    diff = "------- SEARCH\nconst a = 1;\n=======\nconst a = 2;\n+++++++ REPLACE"
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>fix a</task>"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "replace_in_file",
             "input": {"absolutePath": "c:\\app\\src\\a.ts", "diff": diff,
                       "task_progress": "- [x] fix"}},
            {"type": "tool_use", "id": "t2", "name": "write_to_file",
             "input": {"absolutePath": "c:\\app\\src\\b.ts", "content": "export const b = 3;\n"}}]},
    ]
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(history), "utf-8")
    edits = [e for e in _only(path).events if e["kind"] == "file_edit"]
    assert [e["attrs"]["path"] for e in edits] == ["c:\\app\\src\\a.ts", "c:\\app\\src\\b.ts"]
    assert "const a = 2;" in edits[0]["content"].splitlines()
    assert "export const b = 3;" in edits[1]["content"]


def test_cursor_prompts_keep_their_time_and_calls_follow_it() -> None:
    events = _only(CURSOR).events
    assert [e["ts"] for e in events[:3]] == [
        "2026-09-14T10:02:00+02:00", "2026-09-14T08:02:01Z", "2026-09-14T08:02:02Z"]
    shell = next(e for e in events if e.get("tool") == "Shell")
    assert shell["kind"] == "tool_call" and shell["attrs"]["command"] == "npm run build && npm test"


def test_aider_history_is_one_thread_per_session() -> None:
    results = import_path(AIDER, "auto", OPTIONS)
    assert [r.threads[0][:25] for r in results] == ["aider-2025-06-03T18:22:07",
                                                     "aider-2025-06-04T09:01:44"]
    first = results[0].events
    test = next(e for e in first if e["kind"] == "test_result")
    assert test["attrs"]["command"] == "pytest -q" and "exit_code" not in test["attrs"]
    assert "1 failed, 3 passed in 0.08s" in test["content"].splitlines()
    assert [e["kind"] for e in results[1].events] == [
        "note", "tool_call", "test_result", "message", "message", "session_end"]


def test_aider_and_cline_name_the_project_they_worked_in() -> None:
    """Facts are superseded within one project: an aider history names the repository it
    lives in, a Cline / Roo task the working directory its environment details name."""
    assert {e["project_id"] for r in import_path(AIDER, "auto", OPTIONS) for e in r.events} \
        == {"weather-cli"}
    for task in sorted((FIXTURES / "cline").glob("*/tasks/*/api_conversation_history.json")):
        events = import_file(task, "auto", OPTIONS).events
        assert {e["project_id"] for e in events} == {"notes-api"}, task
    named = import_file(AIDER, "auto", ImportOptions(user_id="u", project_id="shop")).events
    assert {e["project_id"] for e in named} == {"shop"}  # the caller's project wins


def test_specstory_versions_session_ids_and_tools() -> None:
    v2 = _only(SPECSTORY_V2)
    assert v2.threads == ["5c7d5c23-0691-4467-b98e-0fb865b4a639"]
    assert v2.events[0]["agent_id"] == "specstory:claude-code"
    call = next(e for e in v2.events if e["kind"] == "tool_call")
    assert call["content"] == "bash scripts/smoke.sh --target staging"
    v1 = _only(SPECSTORY_V1)
    test = next(e for e in v1.events if e["kind"] == "test_result")
    assert "1 failed, 9 passed in 2.41s" in test["content"]
    assert v1.events[0]["content"] == "title: Fix the flaky retry test (2025-03-02 10:14:55)"


def test_transcripts_in_finds_every_agent_and_skips_the_rest(tmp_path: Path) -> None:
    found = {p.relative_to(FIXTURES) for p in transcripts_in(FIXTURES)}
    assert AIDER.relative_to(FIXTURES) in found and SPECSTORY_V1.relative_to(FIXTURES) in found
    assert CLINE_UI.relative_to(FIXTURES) not in found  # its task's history is read
    assert not any(p.name == "README.md" for p in found)
    store = opencode_store(tmp_path)
    (tmp_path / "other.db").write_bytes(store.read_bytes())
    assert list(transcripts_in(tmp_path)) == [store]


def test_claude_subagent_meta_files_are_side_files(tmp_path: Path) -> None:
    # Claude Code 2.1 writes subagents/agent-<id>.meta.json beside each subagent transcript
    sub = tmp_path / "s1" / "subagents"
    sub.mkdir(parents=True)
    meta = sub / "agent-a0c7.meta.json"
    meta.write_text('{"agentType":"Explore","description":"Codebase exploration"}', "utf-8")
    with pytest.raises(ImportFormatError):
        _only(meta)  # not a transcript: a folder walk must not hand it to an importer
    agent = sub / "agent-a0c7.jsonl"
    agent.write_bytes(CLAUDE_SUB.read_bytes())
    assert list(transcripts_in(tmp_path)) == [agent]


def test_documents_that_are_no_transcript_fail_clearly(tmp_path: Path) -> None:
    odd = tmp_path / "settings.json"
    odd.write_text('{"theme": "dark"}', "utf-8")
    with pytest.raises(ImportFormatError, match="Gemini CLI, OpenCode"):
        _only(odd)
    notes = tmp_path / "notes.md"
    notes.write_text("# notes\n\nnothing here\n", "utf-8")
    with pytest.raises(ImportFormatError, match="SpecStory export nor an aider"):
        _only(notes)
    empty = opencode_store(tmp_path, OPENCODE_SQL.read_text("utf-8").split("INSERT")[0])
    with pytest.raises(ImportFormatError, match="without sessions"):
        _only(empty)


def test_unknown_records_keep_their_text(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = _only(COPILOT_OLD).events
    note = next(e for e in events if e.get("attrs", {}).get("unknown_record"))
    assert note["content"].startswith("session.teleport: {") and '"target":"cloud"' in (
        note["content"])
    assert note["attrs"]["record_type"] == "session.teleport"


def test_tool_output_colour_escapes_are_dropped(tmp_path: Path) -> None:
    # terraform's coloured error box, as a Cline execute_command result carried it
    coloured = ("\x1b[31m│\x1b[0m \x1b[0m\x1b[1m\x1b[31mError: \x1b[0m\x1b[0m\x1b[1m"
                "No configuration files\x1b[0m")
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>plan</task>"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",
                                           "name": "execute_command",
                                           "input": {"command": "terraform plan"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [{"type": "text", "text": coloured}]}]},
    ]
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(history), "utf-8")
    events = _only(path).events
    result = next(e for e in events if e["kind"] in ("tool_result", "test_result"))
    assert result["content"] == "│ Error: No configuration files"
    call = next(e for e in events if e["kind"] == "tool_call")
    assert call["content"] == "terraform plan"


def test_specstory_v2_thinking_is_skipped_not_a_tool_call(tmp_path: Path) -> None:
    path = tmp_path / "2025-12-06_19-04-39Z-hello.md"
    path.write_text(
        "<!-- Generated by SpecStory, Markdown v2.0.0 -->\n\n# 2025-12-06 19:04:39Z\n\n"
        "<!-- Claude Code Session 0c56ec44-573e-4087-9413-650d54e1f1b3 "
        "(2025-12-06_19-04-39Z) -->\n\n_**User**_\n\nany plans?\n\n---\n\n"
        "_**Agent (claude-opus-4-5-20251101)**_\n\n<think><details><summary>Thought Process"
        "</summary>\nThe user asks about plans. Let me read the file.\n</details></think>\n\n"
        "_**Agent (claude-opus-4-5-20251101)**_\n\nThe plans are in future_development.md.\n",
        "utf-8")
    result = _only(path)
    assert result.skipped["thinking block"] == 1
    assert not any(e["kind"] == "tool_call" for e in result.events)
    assert not any("Thought Process" in e["content"] for e in result.events)
    assert any(e["content"] == "The plans are in future_development.md." for e in result.events)


def test_specstory_v2_edits_name_the_file_their_reply_names(tmp_path: Path) -> None:
    path = tmp_path / "2025-12-06_19-04-39Z-edit.md"
    path.write_text(
        "<!-- Generated by SpecStory, Markdown v2.0.0 -->\n\n# 2025-12-06 19:04:39Z\n\n"
        "_**Agent (claude-opus-4-5-20251101)**_\n\n"
        '<tool-use data-tool-type="write" data-tool-name="Edit"><details>\n'
        "<summary>Tool use: **Edit**</summary>\n\n```\nThe file /repo/future_development.md "
        "has been updated. Here's the result of running `cat -n` on a snippet of the edited "
        "file:\n    91→### 2.6 Stability across illuminants\n```\n</details></tool-use>\n",
        "utf-8")
    edit = next(e for e in _only(path).events if e["kind"] == "file_edit")
    assert edit["attrs"]["path"] == "/repo/future_development.md"
    assert "### 2.6 Stability across illuminants" in edit["content"]


CLINE_2026 = FIXTURES / "cline/cline-2026/tasks/1777070000123/api_conversation_history.json"
SAMPLE = FIXTURES / "claude-code-session.jsonl"
CODEX_144 = FIXTURES / "codex-0.144-rollout.jsonl"
#: what each agent's transcript records of the session: the settings its notes name
RAN_WITH: list[tuple[Path, dict[str, str], str]] = [
    (SAMPLE, {"agent_version": "2.0.49", "working_directory": "/home/dev/shop-api",
              "git_branch": "feat/login-rate-limit", "model": "claude-sonnet-4-5-20250929"},
     "model: claude-sonnet-4-5-20250929"),
    (CLAUDE_SUB, {"agent_version": "2.1.294", "working_directory": "/home/dev/rates-rs",
                  "git_branch": "main", "model": "claude-haiku-4-5"},
     "claude-code version: 2.1.294"),
    (CODEX_144, {"provider": "openai", "agent_version": "0.144.1",
                 "working_directory": "/home/mika/src/ledger-rs", "git_branch": "fix/rounding",
                 "model": "gpt-5.6-sol"}, "provider: openai"),
    (CODEX, {"provider": "openrouter", "agent_version": "0.143.0",
             "working_directory": "/srv/ci/rates-py", "git_branch": "ci/edition-2024",
             "model": "qwen/qwen3-coder"}, "model: qwen/qwen3-coder"),
    (GEMINI_JSON, {"model": "gemini-2.5-pro"}, "model: gemini-2.5-pro"),
    (GEMINI_JSONL, {"working_directory": "/home/dev/reports", "model": "gemini-3-pro-preview"},
     "working directory: /home/dev/reports"),
    (OPENCODE_EXPORT, {"agent_version": "1.0.180", "working_directory": "/home/dev/shop-web",
                       "model": "claude-sonnet-4-5", "provider": "anthropic"},
     "opencode version: 1.0.180"),
    (CLINE_2026, {"working_directory": "/home/dev/notes-api",
                  "model": "anthropic/claude-sonnet-4.5", "provider": "cline"},
     "model: anthropic/claude-sonnet-4.5"),
    (ROO, {"working_directory": "/home/dev/notes-api"}, "working directory: /home/dev/notes-api"),
    (COPILOT_OLD, {"agent_version": "0.0.369", "working_directory": "/home/dev/invoice-svc",
                   "git_branch": "main", "model": "claude-sonnet-4.5"}, "git branch: main"),
    (COPILOT_NEW, {"agent_version": "1.0.12", "working_directory": "/home/dev/site",
                   "git_branch": "feat/title", "model": "gpt-5.4"}, "model: gpt-5.4"),
    (SPECSTORY_V2, {"model": "claude-opus-4-8"}, "model: claude-opus-4-8"),
    (AIDER, {"agent_version": "v0.84.0", "model": "anthropic/claude-sonnet-4-20250514"},
     "Main model: anthropic/claude-sonnet-4-20250514 with diff edit format, infinite output"),
    (CURSOR, {}, ""),  # Cursor's transcripts record none of it
]


@pytest.mark.parametrize(("path", "settings", "line"), RAN_WITH,
                         ids=[str(t[0].relative_to(FIXTURES)) for t in RAN_WITH])
def test_sessions_name_what_they_ran_with(path: Path, settings: dict[str, str],
                                          line: str) -> None:
    """issue 46: the model, provider, agent version, working directory and branch a
    transcript records are notes of the session's thread — each value verbatim in a line
    of the note, and by name in ``attrs.session_settings`` — where first said."""
    result = import_path(path, "auto", OPTIONS)[0]
    main = result.threads[0]
    notes = [e for e in result.events if e["thread_id"] == main
             and "session_settings" in e.get("attrs", {})]
    said: dict[str, str] = {}
    for note in notes:
        assert note["kind"] == "note" and note["role"] == "system"
        said.update(note["attrs"]["session_settings"])
        assert all(v in note["content"] for v in note["attrs"]["session_settings"].values())
    assert said == settings
    if line:
        assert any(line in n["content"].splitlines() for n in notes), [n["content"] for n in notes]


def test_a_setting_is_said_again_only_when_it_changes() -> None:
    """A ``/model`` switch mid-session is a second note; the same model on every reply is
    not (Claude Code writes ``model`` on each assistant record, ``cwd`` on each)."""
    base = {"sessionId": "s-switch", "cwd": "/srv/app", "version": "2.1.130",
            "gitBranch": "main", "timestamp": "2026-11-20T14:02:00Z"}

    def reply(uid: str, model: str) -> dict[str, Any]:
        return {**base, "type": "assistant", "uuid": uid, "message": {
            "role": "assistant", "model": model, "content": [{"type": "text", "text": "ok"}]}}

    inline = [{**base, "type": "user", "uuid": "u1", "message": {"role": "user",
                                                                 "content": "hi"}},
              reply("a1", "claude-sonnet-4-6"), reply("a2", "claude-sonnet-4-6"),
              reply("a3", "<synthetic>"), reply("a4", "claude-opus-4-7")]
    events = import_records(list(enumerate(inline, 1)), "claude-code", OPTIONS, "x",
                            "x").events
    notes = [e["content"] for e in events if "session_settings" in e.get("attrs", {})]
    assert notes == ["claude-code version: 2.1.130\nworking directory: /srv/app\n"
                     "git branch: main", "model: claude-sonnet-4-6", "model: claude-opus-4-7"]


def test_gemini_names_the_folders_a_recording_lists_once_each_change(tmp_path: Path) -> None:
    """A JSONL recording's metadata lists its ``directories`` (the first is where it runs);
    a ``$set`` that moves it is a second settings note, with an id of its own."""
    lines = [{"sessionId": "g-dirs", "projectHash": "p", "startTime": "2026-05-22T14:59:03Z",
              "directories": ["/home/dev/reports"]},
             {"id": "m1", "timestamp": "2026-05-22T14:59:04Z", "type": "user", "content": "hi"},
             {"$set": {"directories": ["/home/dev/reports-v2"]}},
             {"$set": {"directories": ["/home/dev/reports-v2"]}}]
    path = tmp_path / "session-2026-05-22T14-59-gdirs.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", "utf-8")
    events = _only(path).events
    notes = [e for e in events if "session_settings" in e.get("attrs", {})]
    assert [n["content"] for n in notes] == ["working directory: /home/dev/reports",
                                             "working directory: /home/dev/reports-v2"]
    assert len({e["event_id"] for e in events}) == len(events)

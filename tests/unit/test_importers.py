"""Transcript importers: sample files → contract events (kinds, verbatim content, times)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.importers import (
    ImportFormatError,
    ImportOptions,
    import_file,
    import_records,
    transcripts_in,
)
from breadcrumb.importers.common import background_id, exit_code_in, is_test_command, patch_paths
from breadcrumb.processors.validate import Rejection, validate_event

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
CLAUDE = FIXTURES / "claude-code-session.jsonl"
CODEX = FIXTURES / "codex-rollout.jsonl"
OPENAI = FIXTURES / "openai-chat.json"
CODEX_144 = FIXTURES / "codex-0.144-rollout.jsonl"
CLAUDE_21_DIR = FIXTURES / "claude-code-2.1"
CLAUDE_21_ID = "5c0e9d4b-71a2-4f3e-9b8c-2d6a1e7f0b93"
CLAUDE_21 = CLAUDE_21_DIR / f"{CLAUDE_21_ID}.jsonl"
CLAUDE_21_AGENT = CLAUDE_21_DIR / CLAUDE_21_ID / "subagents" / "agent-a3f9c1d.jsonl"
#: every fixture, its format and the events it imports to (session_end included)
#: (two of them, in a Claude Code or Codex session, the settings notes: what the session runs
#: with, then its model)
FIXTURE_COUNTS = [(CLAUDE, "claude-code", 17), (CODEX, "codex", 19), (OPENAI, "openai", 11),
                  (CODEX_144, "codex", 22), (CLAUDE_21, "claude-code", 19),
                  (CLAUDE_21_AGENT, "claude-code", 9)]
OPTIONS = ImportOptions(user_id="u1")


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] for e in events]


@pytest.mark.parametrize(("path", "fmt", "count"), FIXTURE_COUNTS)
def test_every_imported_event_satisfies_the_contract(path: Path, fmt: str, count: int) -> None:
    result = import_file(path, "auto", OPTIONS)
    events = result.events
    assert result.fmt == fmt and len(events) == count
    problems = [(e, r.message()) for e in events
                if isinstance(r := validate_event(e), Rejection)]
    assert problems == []
    assert events[-1]["kind"] == "session_end"
    assert len({e["event_id"] for e in events}) == len(events)
    assert {e["thread_id"] for e in events} == {events[0]["thread_id"]}
    assert all(e.get("index") is None for e in events)  # the pipeline assigns indexes


@pytest.mark.parametrize(("path", "fmt", "count"), FIXTURE_COUNTS)
def test_reimport_gives_the_same_event_ids(path: Path, fmt: str, count: int) -> None:
    first = [e["event_id"] for e in import_file(path, fmt, OPTIONS).events]
    again = [e["event_id"] for e in import_file(path, fmt, OPTIONS).events]
    other_user = [e["event_id"] for e in import_file(path, fmt, ImportOptions("u2")).events]
    assert first == again
    assert not set(first) & set(other_user)


def test_claude_code_session_maps_tests_edits_and_keeps_content() -> None:
    events = import_file(CLAUDE, "claude-code", OPTIONS).events
    records = _records(CLAUDE)
    assert events[0]["thread_id"] == "7f3c2a1e-5b6d-4e8f-9a0b-1c2d3e4f5a6b"
    assert events[0]["project_id"] == "shop-api" and events[0]["agent_id"] == "claude-code"
    tests = [e for e in events if e["kind"] == "test_result"]
    assert [t["attrs"]["exit_code"] for t in tests] == [1, 0]
    assert tests[0]["attrs"]["command"] == "python -m pytest tests/test_rate_limit.py -q"
    assert "FAILED tests/test_rate_limit.py::test_sixth_attempt_is_blocked" in tests[0]["content"]
    edit = next(e for e in events if e["kind"] == "file_edit")
    assert edit["tool"] == "Edit"
    assert edit["attrs"]["path"] == "/home/dev/shop-api/src/middleware/rate_limit.py"
    edit_input = next(b["input"] for r in records if r.get("type") == "assistant"
                      for b in r["message"]["content"] if b.get("name") == "Edit")
    assert edit_input["new_string"] in edit["content"]
    assert edit_input["old_string"] in edit["content"]
    prompt = next(r["message"]["content"] for r in records if r.get("type") == "user"
                  and isinstance(r["message"]["content"], str) and not r.get("isMeta"))
    user = next(e for e in events if e["role"] == "user")
    assert user["content"] == prompt and user["ts"] == "2026-11-20T14:02:13.087Z"
    assert events[0]["role"] == "system"  # the isMeta caveat is a note, not the user
    assert _kinds(events).count("tool_call") == 3  # Read + two Bash runs


def test_claude_code_timestamps_are_the_records_own() -> None:
    events = import_file(CLAUDE, "claude-code", OPTIONS).events
    stamps = {r["timestamp"] for r in _records(CLAUDE) if "timestamp" in r}
    assert all(e["ts"] in stamps for e in events)
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)


def test_codex_rollout_maps_apply_patch_and_shell_calls() -> None:
    result = import_file(CODEX, "codex", OPTIONS)
    events = result.events
    assert events[0]["thread_id"] == "0199a4c2-7e31-7b40-9d15-3f6e2a8b4c10"
    assert events[0]["project_id"] == "inventory-svc" and events[0]["agent_id"] == "codex"
    edits = [e for e in events if e["kind"] == "file_edit"]
    assert len(edits) == 2  # custom_tool_call apply_patch and shell ["apply_patch", ...]
    assert edits[0]["attrs"]["paths"] == ["internal/export/csv.go",
                                          "internal/export/csv_test.go"]
    assert edits[0]["content"].startswith("*** Begin Patch") and "csv.NewWriter(w)" in edits[0][
        "content"]
    tests = [e for e in events if e["kind"] == "test_result"]
    assert [(t["attrs"]["command"], t["attrs"]["exit_code"]) for t in tests] == [
        ("go test ./internal/export/...", 1), ("go test ./internal/export/...", 0)]
    assert "undefined: csv" in tests[0]["content"]
    shell = next(e for e in events if e["kind"] == "tool_call")
    assert shell["content"] == 'rg -n "func ExportCSV" -A 12 internal/export/csv.go'
    assert result.skipped["record type event_msg"] == 3  # duplicates of response items
    asked = next(e for e in events if e["kind"] == "message")
    assert asked["content"].startswith("The CSV export breaks")
    assert asked["ts"] == "2026-11-21T08:15:09.006Z"


def test_openai_chat_synthesizes_times_from_the_base_time() -> None:
    base = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
    events = import_file(OPENAI, "openai", ImportOptions("u1", base_time=base)).events
    assert [e["ts"] for e in events[:3]] == ["2026-11-22T10:00:01Z", "2026-11-22T10:00:02Z",
                                            "2026-11-22T10:00:03Z"]
    assert _kinds(events) == ["message", "message", "tool_call", "tool_result", "message",
                              "file_edit", "tool_result", "tool_call", "test_result",
                              "message", "session_end"]
    edit = events[5]
    assert edit["attrs"]["path"] == "config/vat.yaml" and "  DE: 0.19" in edit["content"]
    test = events[8]
    assert test["attrs"] == {"exit_code": 0, "command": "npm test -- --runInBand "
                             "tests/vat.test.ts", "tool_call_id": "call_q7R8s9T0u1V2w3X4"}
    raw = json.loads(OPENAI.read_text("utf-8"))["messages"]
    assert test["content"] == raw[7]["content"]  # tool output verbatim


def test_openai_plain_list_and_options_override_thread_and_project() -> None:
    messages = [{"role": "user", "content": "hi", "timestamp": "2026-01-02T03:04:05+09:00"},
                {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]
    options = ImportOptions("u9", project_id="p", thread_id="t", agent_id="a")
    events = import_records(messages, "openai", options, "x.json", "x").events
    assert [e["ts"] for e in events] == ["2026-01-02T03:04:05+09:00",
                                         "2026-01-01T18:04:06Z", "2026-01-01T18:04:06Z"]
    assert {(e["user_id"], e["thread_id"], e["project_id"], e["agent_id"]) for e in events} == {
        ("u9", "t", "p", "a")}


def test_codex_0144_exec_cells_become_commands_patches_and_test_results() -> None:
    result = import_file(CODEX_144, "auto", OPTIONS)
    events = result.events
    assert events[0]["thread_id"] == "019f3a61-2c7d-7e02-b5a4-8d1e6c0f9a37"
    assert events[0]["project_id"] == "ledger-rs"
    calls = [e["content"] for e in events if e["kind"] == "tool_call"]
    assert calls[:2] == ['rg -n "round_dp" src/money.rs Cargo.toml', "mise run test"]
    edits = [e for e in events if e["kind"] == "file_edit"]
    assert edits[0]["attrs"]["paths"] == ["src/money.rs", "Cargo.toml"]
    assert 'resolver = "2"' in edits[0]["content"]  # unescaped: the value verbatim
    assert "\\n" not in edits[0]["content"] and '\\"' not in edits[0]["content"]
    # a patch assembled at run time: only patch_apply_end records it
    assert edits[1]["attrs"]["path"].endswith("crates/ledger/src/invoice.rs")
    assert "+    crate::money::round_even(qty * unit)" in edits[1]["content"]
    assert result.skipped["patch_apply_end (patch already recorded)"] == 1
    assert result.skipped["wait call"] == 1
    running = [e for e in events if (e.get("attrs") or {}).get("running")]
    assert [e["kind"] for e in running] == ["tool_result"]  # a running cell is no verdict
    tests = [e for e in events if e["kind"] == "test_result"]
    assert [(t["attrs"]["command"], t["attrs"]["exit_code"]) for t in tests] == [
        ("mise run test", 101), ("mise run test", 0)]
    assert tests[0]["attrs"]["cell_id"] == "7"  # finished by the wait on its cell
    assert "invoice::tests::three_at_0_335" in tests[0]["content"]
    assert "\n  left: 1.01\n right: 1.00\n" in tests[0]["content"]  # printed JSON unwrapped
    assert tests[0]["attrs"]["json_unwrapped"] is True


def test_claude_code_21_background_runs_and_task_runners() -> None:
    events = import_file(CLAUDE_21, "auto", OPTIONS).events
    assert {e["thread_id"] for e in events} == {CLAUDE_21_ID}
    background = next(e for e in events if (e.get("attrs") or {}).get("background"))
    assert background["kind"] == "tool_result"  # "Command running in background…"
    assert background["attrs"]["command"] == "pnpm test"
    tests = [e for e in events if e["kind"] == "test_result"]
    assert [(t["tool"], t["attrs"]["command"], t["attrs"]["exit_code"]) for t in tests] == [
        ("TaskOutput", "pnpm test", 1), ("Bash", "mise run test:ci 2>&1 | tail -5", 0)]
    assert "expected 201 to be 200" in tests[0]["content"]
    edit = next(e for e in events if e.get("tool") == "Edit")
    assert "export const IDEMPOTENCY_TTL_SECONDS = 86_400;" in edit["content"]


def test_a_subagent_file_becomes_its_own_thread_linked_to_the_session() -> None:
    events = import_file(CLAUDE_21_AGENT, "auto", OPTIONS).events
    assert {e["thread_id"] for e in events} == {f"{CLAUDE_21_ID}/agent-a3f9c1d"}
    assert {e["attrs"]["parent_thread_id"] for e in events} == {CLAUDE_21_ID}
    inline = [dict(r, isSidechain=True, agentId="z9") if i >= 3 else r
              for i, r in enumerate(_records(CLAUDE_21))]  # an older inline sidechain
    result = import_records(list(enumerate(inline, 1)), "claude-code", OPTIONS, "x", "x")
    assert set(result.threads) == {CLAUDE_21_ID, f"{CLAUDE_21_ID}/agent-z9"}
    assert [e["kind"] for e in result.events].count("session_end") == 2


def test_identity_is_the_session_not_the_file_name(tmp_path: Path) -> None:
    renamed = tmp_path / "renamed-copy.jsonl"
    renamed.write_bytes(CODEX_144.read_bytes())
    first = [e["event_id"] for e in import_file(CODEX_144, "auto", OPTIONS).events]
    assert [e["event_id"] for e in import_file(renamed, "auto", OPTIONS).events] == first
    other = tmp_path / "b" / CODEX_144.name  # same name, another session
    other.parent.mkdir()
    other.write_text(CODEX_144.read_text("utf-8").replace("019f3a61-2c7d", "019f3a61-ffff"),
                     "utf-8")
    second = import_file(other, "auto", OPTIONS).events
    assert second[0]["thread_id"] == "019f3a61-ffff-7e02-b5a4-8d1e6c0f9a37"
    assert not {e["event_id"] for e in second} & set(first)


def test_chats_without_an_id_are_told_apart_by_content(tmp_path: Path) -> None:
    one, two = tmp_path / "a" / "chat.json", tmp_path / "b" / "chat.json"
    for path, text in ((one, "first chat"), (two, "second chat")):
        path.parent.mkdir()
        path.write_text(json.dumps([{"role": "user", "content": text}]), "utf-8")
    threads = {import_file(p, "auto", OPTIONS).events[0]["thread_id"] for p in (one, two)}
    assert len(threads) == 2


def test_folders_are_walked_and_formats_recognised(tmp_path: Path) -> None:
    assert list(transcripts_in(CLAUDE_21_DIR)) == [CLAUDE_21_AGENT, CLAUDE_21]
    found = {p.name: import_file(p, "auto", OPTIONS).fmt for p in transcripts_in(FIXTURES)}
    assert found[CODEX_144.name] == "codex" and found[OPENAI.name] == "openai"
    lines = tmp_path / "chat.jsonl"
    lines.write_text('{"role": "user", "content": "hi"}\n', "utf-8")
    assert import_file(lines, "auto", OPTIONS).fmt == "openai"
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"hello": 1}\n', "utf-8")
    with pytest.raises(ImportFormatError, match="not a Claude Code, Codex or OpenAI"):
        import_file(odd, "auto", OPTIONS)


def test_a_file_of_another_format_is_refused_with_a_reason() -> None:
    with pytest.raises(ImportFormatError, match="no codex transcript records"):
        import_file(CLAUDE, "codex", OPTIONS)


@pytest.mark.parametrize(("command", "expected"), [
    ("python -m pytest tests/ -q", True), ("npm test", True), ("npm run test -- x", True),
    ("npx vitest run", True), ("go test ./...", True), ("cargo test --lib", True),
    ("cd web && yarn test", True), ("pytest", True), ("cat pytest.ini", False),
    ("ls tests", False), ("git commit -m 'go test'", False),
    ("mise run test", True), ("mise run test:ci", True), ("just test", True),
    ("make test", True), ("uv run pytest -q", True), ("pnpm test", True),
    ("cargo nextest run", True), ("npm run test:unit", True), ("mise run lint", False),
])
def test_test_command_detection(command: str, expected: bool) -> None:
    assert is_test_command(command) is expected


def test_background_notices() -> None:
    assert background_id("Command running in background with ID: b4k2p9. Output is being "
                         "written to: /tmp/x") == "b4k2p9"
    assert background_id("Command running in background with ID: bash_1") == "bash_1"
    assert background_id("5 passed") is None


def test_exit_codes_and_patch_paths() -> None:
    assert exit_code_in("Exit code 101\nerror[E0433]") == 101
    assert exit_code_in("Exit code: 2\nWall time: 1s") == 2
    assert exit_code_in("all good") is None
    patch = "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n*** Add File: c.py\n"
    assert patch_paths(patch) == ["a.py", "c.py", "b.py"]


def test_claude_session_records_speak_with_the_voice_that_wrote_them() -> None:
    """The model titles and recaps a session, the user names it, the harness says the
    rest: the roles tell the observer whose words a note holds (its phrase hints come
    from people's words, never from a harness's caveat)."""
    base = {"sessionId": "s-roles", "cwd": "/srv/app", "timestamp": "2026-11-20T14:02:00Z"}
    inline = [
        {**base, "type": "ai-title", "aiTitle": "Throttle password resets", "uuid": "r1"},
        {**base, "type": "custom-title", "customTitle": "reset limits", "uuid": "r2"},
        {**base, "type": "system", "subtype": "away_summary", "uuid": "r3",
         "content": "Added a per-account limit to the password reset endpoint."},
        {**base, "type": "system", "subtype": "informational", "uuid": "r4",
         "content": "Auto-compact is off"},
        {**base, "type": "user", "isMeta": True, "uuid": "r5", "message": {
            "role": "user", "content": "Caveat: The messages below were generated by the user "
                                       "while running local commands."}},
    ]
    events = import_records(list(enumerate(inline, 1)), "claude-code", OPTIONS, "x", "x").events
    roles = {e["content"][:14]: e["role"] for e in events if e["kind"] == "note"
             and "session_settings" not in e.get("attrs", {})}
    assert roles == {"title: Throttl": "assistant", "title: reset l": "user",
                     "Added a per-ac": "assistant", "Auto-compact i": "system",
                     "Caveat: The me": "system"}

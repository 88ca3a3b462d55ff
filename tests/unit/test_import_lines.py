"""Each imported event knows the 1-based line of the transcript it was read from, so a
refused event is reported by that line (``ImportResult.lines``; issue 24 item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from breadcrumb.importers import ImportOptions, import_path
from breadcrumb.importers.common import Draft, LineRecords, current_line
from tests.unit.test_importers import CLAUDE, CODEX, CODEX_144, FIXTURES

OPTIONS = ImportOptions(user_id="u")
JSONL = [CLAUDE, CODEX, CODEX_144, *sorted((FIXTURES / "gemini" / "jsonl").rglob("*.jsonl")),
         *sorted((FIXTURES / "copilot").rglob("*.jsonl")),
         *sorted((FIXTURES / "cursor").rglob("*.jsonl"))]


@pytest.mark.parametrize("path", JSONL, ids=[p.name for p in JSONL])
def test_every_event_of_a_jsonl_transcript_names_a_line_that_holds_it(path: Path) -> None:
    text = path.read_text("utf-8").splitlines()
    for result in import_path(path, "auto", OPTIONS):
        assert len(result.lines) == len(result.events)
        for event, line in zip(result.events, result.lines, strict=True):
            if event["kind"] == "session_end" or event.get("attrs", {}).get("side_file"):
                assert line is None  # added by the importer, or read beside: no line of it
                continue
            assert line is not None and 1 <= line <= len(text), (event, line)
            assert text[line - 1].strip()  # a record, never a blank line
        from_lines = [n for n in result.lines if n is not None]
        assert from_lines, path


def test_the_line_is_the_record_s_own_when_one_record_gives_several_events(
        tmp_path: Path) -> None:
    """An assistant record with text and a tool call gives two events, both of its line;
    the tool's result, read from a later line, is that line's."""
    session = "6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    rows = [
        {"type": "user", "message": {"role": "user", "content": "run the tests"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Running them."},
            {"type": "tool_use", "id": "t1", "name": "Bash",
             "input": {"command": "pytest -q"}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "3 passed"}]}},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n\n".join(json.dumps({**row, "sessionId": session, "uuid": f"u{i}",
                                            "timestamp": f"2026-11-20T10:00:0{i}Z"})
                                for i, row in enumerate(rows)) + "\n")
    result = import_path(path, "claude-code", OPTIONS)[0]
    kinds = [(e["kind"], n) for e, n in zip(result.events, result.lines, strict=True)]
    assert kinds == [("message", 1), ("message", 3), ("tool_call", 3), ("test_result", 5),
                     ("session_end", None)]
    assert result.line_of(99) is None and result.line_of(-1) is None


def test_openai_messages_one_a_line_keep_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n\n'
                    '{"role": "assistant", "content": "hello"}\n')
    result = import_path(path, "openai", OPTIONS)[0]
    assert result.lines == [1, 3, None]


def test_a_whole_file_document_has_no_lines(tmp_path: Path) -> None:
    result = import_path(FIXTURES / "openai-chat.json", "openai", OPTIONS)[0]
    assert set(result.lines) == {None}


def test_line_records_set_the_current_line_only_while_iterated() -> None:
    records = LineRecords(["a", "b"], [4, 9])
    seen = [(value, current_line(), Draft("p", "user", "message", value).line)
            for value in records]
    assert seen == [("a", 4, 4), ("b", 9, 9)]
    assert current_line() is None and Draft("p", "user", "message", "x").line is None
    assert records[1] == "b" and len(records) == 2 and records.lines == [4, 9]

"""What Cline / Roo say to the model in the user's turn is no user message, and a result
whose call holds ``]`` is a result (shapes of the public MRA04242026 Cline task)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from breadcrumb.importers import ImportOptions, import_file

OPTIONS = ImportOptions(user_id="u1")
ENV = ("<environment_details>\n# Visual Studio Code Visible Files\n(No visible files)\n\n"
       "# Current Working Directory (c:/Apps/MRA04242026) Files\n.gitignore\n"
       "</environment_details>")


def _events(tmp_path: Path, user_texts: list[str]) -> list[dict[str, Any]]:
    """A Cline 3.x XML-tool history: a task, a command, then one user turn per text."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\ncheck the db\n</task>"},
                                     {"type": "text", "text": ENV}]},
        {"role": "assistant", "content": [{"type": "text", "text": (
            "I'll query it.\n<execute_command>\n<command>node -e \"const r = rows[0]; "
            "console.log(r)\"</command>\n</execute_command>")}]},
    ]
    history += [{"role": "user", "content": [{"type": "text", "text": t}]} for t in user_texts]
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(history), "utf-8")
    return import_file(path, "auto", OPTIONS).events


def test_a_result_whose_command_holds_a_bracket_is_the_commands_result(tmp_path: Path) -> None:
    result = ("[execute_command for 'node -e \"const r = rows[0]; console.log(r)\"'] Result:\n"
              "Command executed.\nOutput:\n{ db: 'dev_entanglement_db' }")
    events = _events(tmp_path, [result])
    last = events[-1] if events[-1]["kind"] != "session_end" else events[-2]
    assert last["kind"] == "tool_result" and last["role"] == "tool"
    assert last["content"].startswith("Command executed.")  # the header is no output line
    assert not any(e["role"] == "user" and "Result:" in e["content"] for e in events)


def test_the_extensions_own_prompts_are_notes(tmp_path: Path) -> None:
    nudge = ("[ERROR] You did not use a tool in your previous response! Please retry with a "
             "tool use.\n\n# Next Steps\n\nIf you have completed the user's task, use the "
             "attempt_completion tool.")
    todo = ("\n\n\t\t\t\t# TODO LIST UPDATE REQUIRED - You MUST include the task_progress "
            "parameter in your NEXT tool call.\n\n**Current Progress: 0/5 items completed**")
    resumed = ("[TASK RESUMPTION] This task was interrupted 7 days ago. The current working "
               "directory is now 'c:/Apps/MRA04242026'.")
    events = _events(tmp_path, [nudge, todo, resumed])
    said = {e["content"].strip()[:12]: (e["kind"], e["role"]) for e in events}
    assert said["[ERROR] You "] == said["# TODO LIST "] == said["[TASK RESUMP"] == (
        "note", "system")
    assert [e["content"] for e in events if e["role"] == "user"] == [
        "<task>\ncheck the db\n</task>"]


def test_a_resumed_task_with_the_users_words_stays_a_user_message(tmp_path: Path) -> None:
    resumed = ("[TASK RESUMPTION] This task was interrupted 7 days ago.\n\nNew instructions "
               "for task continuation:\n<user_message>\nremove the firebase remnants\n"
               "</user_message>")
    events = _events(tmp_path, [resumed])
    assert [e["kind"] for e in events if e["content"] == resumed] == ["message"]

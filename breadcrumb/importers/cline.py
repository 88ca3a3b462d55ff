"""Cline and Roo Code tasks (``…/globalStorage/<extension>/tasks/<taskId>/``).

Two files per task, both JSON arrays:

* ``api_conversation_history.json`` (format ``cline``): the model's conversation,
  Anthropic messages ``{role, content: [blocks]}`` (Roo adds ``ts``). Older builds call
  tools in XML inside the assistant's text (``<execute_command><command>npm test
  </command></execute_command>``) and answer in the next user message
  (``[execute_command for 'npm test'] Result:`` then the output); newer builds use
  native ``tool_use`` / ``tool_result`` blocks. ``<environment_details>`` blocks and
  what the extension itself tells the model in the user's turn (``[ERROR] You did not use
  a tool …``, ``[TASK RESUMPTION] …``, a to-do reminder) are notes.
* ``ui_messages.json`` (format ``cline-ui``): what the panel showed, ``{ts, type: "say" |
  "ask", say | ask, text}``: ``task`` / ``user_feedback`` are user messages, ``text`` /
  ``completion_result`` assistant messages, ``command`` a ``tool_call``,
  ``command_output`` its result, ``tool`` (JSON ``{tool, path, diff | content}``) a
  ``file_edit`` or ``tool_call``; ``api_req_*``, ``checkpoint_created``, ``reasoning``
  and partial messages are skipped (counted); other types are unknown notes.

The thread is the task's own id where Roo's ``history_item.json`` beside the files names
it (with its ``parentTaskId``: a subtask is a thread linked to its parent task), else
``cline-task-<first ts>`` (the first ``ts`` of ``ui_messages.json`` — the history file
takes it from the one beside it — or of a Roo message), else a digest of the first message.
Exit codes come from the output text (``Exit code: 1``). The model and provider newer
builds write on each message (``modelInfo``), the working directory the
``<environment_details>`` name (and Roo's ``<model>`` there) are a settings note where first
said and where they change (``common.settings_note``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import orjson

from breadcrumb.importers.common import (
    Draft,
    Parsed,
    ToolCall,
    add_settings,
    parse_ts,
    unknown_note,
)
from breadcrumb.importers.toolcalls import call_draft, result_draft

XML_TOOLS = ("execute_command", "write_to_file", "replace_in_file", "apply_diff",
             "read_file", "search_files", "list_files", "list_code_definition_names",
             "attempt_completion", "ask_followup_question", "new_task", "use_mcp_tool",
             "access_mcp_resource", "browser_action", "insert_content",
             "search_and_replace", "plan_mode_respond", "switch_mode", "fetch_instructions",
             "codebase_search", "update_todo_list", "web_fetch")
_TOOL_RE = re.compile(r"<(" + "|".join(XML_TOOLS) + r")>(.*?)</\1>", re.DOTALL)
_PARAM_RE = re.compile(r"<(\w+)>\n?(.*?)\n?</\1>", re.DOTALL)
#: ``[execute_command for 'node -e "…[0]…"'] Result:``: what the call was for may hold ``]``
_RESULT_RE = re.compile(r"^\[(\w+)(?: for .*?)?\] Result:", re.DOTALL)
#: What Cline / Roo say to the model in the user's turn — a nudge after a reply without a
#: tool, a resumed task's preamble, a to-do reminder, the environment — are notes, unless
#: they carry the user's own words (a resumed task's ``<user_message>``).
_HARNESS = re.compile(r"^\s*(?:<environment_details>|\[ERROR\] You did not use a tool"
                      r"|\[TASK RESUMPTION\]|# TODO LIST UPDATE REQUIRED)")
_USER_WORDS = re.compile(r"<(?:user_message|feedback|answer)>")
_UI_SKIPPED = frozenset({"api_req_started", "api_req_finished", "api_req_retried",
                         "api_req_deleted", "checkpoint_created", "reasoning",
                         "shell_integration_warning", "resume_task", "resume_completed_task",
                         "api_req_failed", "condense_context", "browser_action_launch",
                         "mcp_server_request_started", "deleted_api_reqs",
                         "task_progress", "hook", "hook_output", "info"})
_UI_USER = frozenset({"task", "user_feedback", "user_feedback_diff"})
_UI_ASSISTANT = frozenset({"text", "completion_result", "followup", "plan_mode_respond"})
_EDIT_TOOLS = frozenset({"editedExistingFile", "newFileCreated", "appliedDiff",
                         "insertContent", "searchAndReplace", "fileDeleted"})


def looks_like_history(document: Any) -> bool:
    """``api_conversation_history.json``: Anthropic messages with Cline's markers."""
    if not isinstance(document, list) or not document:
        return False
    for message in document[:4]:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return False
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            if not isinstance(block, dict):
                continue
            text = str(block.get("text", ""))
            if block.get("type") in ("tool_use", "tool_result") or "ts" in message or (
                    "<environment_details>" in text or text.startswith("<task>")
                    or _TOOL_RE.search(text)):
                return True
    return False


def looks_like_ui(document: Any) -> bool:
    """``ui_messages.json``: ``{ts, type: say | ask}`` items."""
    return (isinstance(document, list) and bool(document) and all(
        isinstance(m, dict) and isinstance(m.get("ts"), int) and m.get("type") in ("say", "ask")
        for m in document[:5]))


def task_id(ui_messages: Any) -> str | None:
    """The task's thread id: the ``ts`` of its first UI message."""
    if looks_like_ui(ui_messages):
        return f"cline-task-{ui_messages[0]['ts']}"
    return None


def parse_history(messages: list[Any]) -> Parsed:
    """Drafts of an ``api_conversation_history.json``."""
    parsed = Parsed(drafts=[], agent="cline")
    first = messages[0] if messages and isinstance(messages[0], dict) else {}
    if isinstance(first.get("ts"), int):  # Roo: every message has its time
        parsed.session_id = f"cline-task-{first['ts']}"
    calls: dict[str, ToolCall] = {}
    pending: list[str] = []  # XML calls waiting for their "[tool] Result:"
    for number, message in enumerate(messages):
        if not isinstance(message, dict):
            parsed.skipped["not a message"] += 1
            continue
        role = "assistant" if message.get("role") == "assistant" else "user"
        ts = parse_ts(message.get("ts"))
        _model_settings(parsed, str(number), message, ts)
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        waiting: str | None = None
        for index, block in enumerate(blocks):
            position = f"{number}.{index}"
            if not isinstance(block, dict):
                parsed.skipped["not a block"] += 1
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                waiting = _text(position, role, block["text"], ts, calls, pending, waiting,
                                parsed)
            elif kind == "tool_use":
                call_id = str(block.get("id") or position)
                parsed.drafts.append(call_draft(position, str(block.get("name") or "tool"),
                                                block.get("input"), ts, call_id, calls))
            elif kind == "tool_result":
                call_id = str(block.get("tool_use_id"))
                parsed.drafts.append(result_draft(
                    position, calls.get(call_id), _block_text(block.get("content")), ts,
                    failed=True if block.get("is_error") else None, call_id=call_id))
            else:
                parsed.skipped[f"{kind} block"] += 1
    parsed.project = working_directory(parsed.drafts)
    return parsed


#: the task's folder, in every ``<environment_details>`` block Cline / Roo add
_CWD = re.compile(r"# Current Working Directory \(([^)\n]+)\)")
#: the model Roo names in its ``# Current Mode`` section (``<model>…</model>``)
_MODE_MODEL = re.compile(r"<model>([^<\n]+)</model>")


def working_directory(drafts: list[Draft]) -> str | None:
    """The project a task worked in: the last part of the working directory its
    ``<environment_details>`` name most often (a resumed task may name another first;
    ``c:/Apps/MRA04242026`` -> ``MRA04242026``)."""
    named = Counter(found.group(1).strip() for draft in drafts
                    if "Current Working Directory" in draft.content
                    for found in _CWD.finditer(draft.content))
    if not named:
        return None
    folder = named.most_common(1)[0][0]
    return re.split(r"[\\/]", folder.rstrip("/\\"))[-1][:128] or None


def _text(position: str, role: str, text: str, ts: str | None, calls: dict[str, ToolCall],
          pending: list[str], waiting: str | None, parsed: Parsed) -> str | None:
    """One text block; returns the call id whose result the next block holds."""
    if not text.strip():
        return waiting
    if waiting is not None:
        parsed.drafts.append(result_draft(position, calls.get(waiting), text, ts,
                                          call_id=waiting))
        return None
    if role == "user":
        match = _RESULT_RE.match(text)
        if match is not None:
            call_id = next((c for c in pending if calls[c].name == match.group(1)), None)
            if call_id is not None:
                pending.remove(call_id)
            rest = text[match.end():].strip()
            if rest:
                parsed.drafts.append(result_draft(position, calls.get(str(call_id)), rest, ts,
                                                  call_id=call_id))
                return None
            return call_id or "unmatched"
        kind = "note" if _HARNESS.match(text) and not _USER_WORDS.search(text) else "message"
        if kind == "note":
            _environment_settings(parsed, position, text, ts)
        parsed.drafts.append(Draft(position, "system" if kind == "note" else "user", kind,
                                   text, ts))
        return None
    said = _TOOL_RE.sub("", text).strip()
    if said:
        parsed.drafts.append(Draft(position, "assistant", "message", said, ts))
    for number, match in enumerate(_TOOL_RE.finditer(text)):
        args = {k: v for k, v in _PARAM_RE.findall(match.group(2))}
        call_id = f"{position}.t{number}"
        pending.append(call_id)
        parsed.drafts.append(call_draft(call_id, match.group(1), args, ts, call_id, calls,
                                        raw=match.group(0)))
    return None


def _model_settings(parsed: Parsed, position: str, message: dict[str, Any],
                    ts: str | None) -> None:
    """The model and provider newer Cline builds write on each message (``modelInfo:
    {modelId, providerId, mode}``), where first named and where they change."""
    info = message.get("modelInfo")
    if isinstance(info, dict):
        add_settings(parsed, position, ts, model=info.get("modelId"),
                     provider=info.get("providerId"))


def _environment_settings(parsed: Parsed, position: str, text: str, ts: str | None) -> None:
    """What an ``<environment_details>`` block says the task runs with: its ``# Current
    Working Directory (…)`` and, in Roo's ``# Current Mode``, its ``<model>``."""
    cwd = _CWD.search(text)
    model = _MODE_MODEL.search(text)
    add_settings(parsed, position, ts, model=model.group(1).strip() if model else None,
                 working_directory=cwd.group(1).strip() if cwd else None)


def _block_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return content if isinstance(content, str) else ""


def parse_ui(messages: list[Any]) -> Parsed:
    """Drafts of a ``ui_messages.json``."""
    parsed = Parsed(drafts=[], agent="cline", session_id=task_id(messages))
    calls: dict[str, ToolCall] = {}
    last_command: str | None = None
    used: set[str] = set()
    for number, message in enumerate(messages):
        if not isinstance(message, dict):
            parsed.skipped["not a message"] += 1
            continue
        kind = message.get("say") if message.get("type") == "say" else message.get("ask")
        position = str(message.get("ts", number))
        if position in used:
            position = f"{position}.{number}"
        used.add(position)
        ts = parse_ts(message.get("ts"))
        text = str(message.get("text") or "")
        _model_settings(parsed, position, message, ts)
        if message.get("partial"):
            parsed.skipped["partial message"] += 1
        elif kind in _UI_SKIPPED:
            parsed.skipped[f"{message.get('type')} {kind}"] += 1
        elif kind in _UI_USER and text:
            parsed.drafts.append(Draft(position, "user", "message", text, ts))
        elif kind in _UI_ASSISTANT and text:
            parsed.drafts.append(Draft(position, "assistant", "message", _question(text), ts))
        elif kind == "command" and text:
            last_command = position
            parsed.drafts.append(call_draft(position, "execute_command", {"command": text},
                                            ts, position, calls))
        elif kind == "command_output":
            parsed.drafts.append(result_draft(position, calls.get(str(last_command)), text, ts,
                                              call_id=last_command))
        elif kind == "tool" and text:
            parsed.drafts.append(_ui_tool(position, text, ts, calls))
        elif kind in ("error", "mistake_limit_reached", "diff_error") and text:
            parsed.drafts.append(Draft(position, "system", "note", text, ts,
                                       attrs={"ui_type": kind}))
        elif not text and kind is not None:
            parsed.skipped[f"empty {kind}"] += 1
        else:
            parsed.drafts.append(unknown_note(parsed, position, f"{message.get('type')} {kind}",
                                              message, ts))
    return parsed


def _question(text: str) -> str:
    if text.startswith("{"):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
        if isinstance(value, dict) and isinstance(value.get("question"), str):
            return value["question"]
    return text


def _ui_tool(position: str, text: str, ts: str | None, calls: dict[str, ToolCall]) -> Draft:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        return Draft(position, "assistant", "tool_call", text, ts, "tool")
    tool = str(value.get("tool") or "tool")
    if tool in _EDIT_TOOLS:
        path = str(value.get("path") or "")
        body = value.get("diff") or value.get("content") or ""
        return Draft(position, "assistant", "file_edit", f"{tool} {path}\n{body}", ts, tool,
                     {"path": path, "paths": [path]})
    return call_draft(position, tool, value, ts, position, calls, raw=text)

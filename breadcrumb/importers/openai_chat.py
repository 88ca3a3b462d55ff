"""OpenAI chat messages: a JSON list of ``{role, content, tool_calls, tool_call_id, name}``
or ``{"messages": [...]}`` (as logged from the Chat Completions API).

Assistant ``tool_calls`` become ``tool_call`` events (a shell tool's ``command`` is the
content) or ``file_edit`` for edit tools with a path; ``role: tool`` answers become
``tool_result`` — ``test_result`` when the call ran tests — with ``attrs.exit_code``
when the output states one. Messages have no times unless a ``timestamp`` /
``created_at`` / ``created`` field is present; the importer synthesizes the rest.
"""

from __future__ import annotations

from typing import Any

import orjson

from breadcrumb.importers.common import (
    Draft,
    ImportFormatError,
    Parsed,
    ToolCall,
    exit_code_in,
    is_test_command,
    parse_ts,
    patch_paths,
    render_edit,
    result_attrs,
    result_kind,
)

SHELL_TOOLS = frozenset({"bash", "shell", "run_shell", "run_command", "execute_command",
                         "terminal", "exec", "run_terminal_cmd", "shell_command",
                         "exec_command", "execute_bash"})
EDIT_TOOLS = frozenset({"edit_file", "write_file", "apply_patch", "str_replace_editor",
                        "create_file", "replace_in_file", "edit", "write", "multi_edit",
                        "str_replace_based_edit_tool"})
_PATH_KEYS = ("path", "file_path", "filename", "target_file", "file")


def messages_of(document: Any) -> list[Any]:
    """The message list of a chat export, or ``ImportFormatError``."""
    if isinstance(document, dict) and isinstance(document.get("messages"), list):
        return list(document["messages"])
    if isinstance(document, list):
        return document
    raise ImportFormatError('expected a list of messages or {"messages": [...]}')


def conversation_id(document: Any) -> str | None:
    """The export's own id (``id`` / ``conversation_id`` / ``thread_id``), if it has one."""
    if isinstance(document, dict):
        for key in ("conversation_id", "thread_id", "id"):
            if isinstance(document.get(key), str) and document[key]:
                return str(document[key])
    return None


def looks_like_messages(document: Any) -> bool:
    """True for a chat export: a list of ``{role, content}`` or ``{"messages": [...]}``."""
    try:
        messages = messages_of(document)
    except ImportFormatError:
        return False
    first = next((m for m in messages if isinstance(m, dict)), None)
    return first is not None and isinstance(first.get("role"), str) and (
        "content" in first or "tool_calls" in first)


def parse(messages: list[Any]) -> Parsed:
    """Drafts for the messages, in order."""
    parsed = Parsed(drafts=[], agent="openai-chat")
    calls: dict[str, ToolCall] = {}
    for number, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            parsed.skipped["not a message"] += 1
            continue
        drafts = _message(number, message, calls)
        if not drafts:
            parsed.skipped[f"empty {message['role']} message"] += 1
        parsed.drafts.extend(drafts)
    return parsed


def _message(number: int, message: dict[str, Any], calls: dict[str, ToolCall]) -> list[Draft]:
    ts = parse_ts(message.get("timestamp", message.get("created_at", message.get("created"))))
    role = message["role"]
    text = _text(message.get("content"))
    if role in ("tool", "function"):
        return [_result(str(number), message, text, ts, calls)]
    drafts: list[Draft] = []
    if text:
        speaker = {"developer": "system"}.get(role, role)
        if speaker in ("user", "assistant", "system"):
            drafts.append(Draft(str(number), speaker, "message", text, ts))
    tool_calls = list(message.get("tool_calls") or [])
    if isinstance(message.get("function_call"), dict):  # legacy single function call
        tool_calls.append({"id": message.get("name"), "function": message["function_call"]})
    for sub, tool_call in enumerate(tool_calls):
        if isinstance(tool_call, dict):
            drafts.append(_call(f"{number}.{sub}", tool_call, ts, calls))
    return drafts


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) and "text" in p
                         else "[image]" for p in content)
    return ""


def _call(position: str, tool_call: dict[str, Any], ts: str | None,
          calls: dict[str, ToolCall]) -> Draft:
    function = tool_call.get("function") if isinstance(tool_call.get("function"), dict) else {}
    assert isinstance(function, dict)
    name = str(function.get("name") or "tool")
    raw = function.get("arguments", "")
    raw_text = raw if isinstance(raw, str) else orjson.dumps(raw).decode()
    args = _loads(raw)
    command = args.get("command", args.get("cmd")) if name.lower() in SHELL_TOOLS else None
    command = " ".join(map(str, command)) if isinstance(command, list) else command
    call = ToolCall(name, command if isinstance(command, str) else None)
    call.is_test = is_test_command(call.command)
    call_id = tool_call.get("id")
    calls[str(call_id)] = call
    attrs: dict[str, Any] = {"tool_call_id": call_id} if call_id else {}
    edit = _edit(name, args)
    if edit is not None:
        return Draft(position, "assistant", "file_edit", edit[1], ts, name,
                     {**attrs, "path": edit[0]})
    if call.command is not None:
        return Draft(position, "assistant", "tool_call", call.command, ts, name,
                     {**attrs, "command": call.command})
    return Draft(position, "assistant", "tool_call", raw_text, ts, name, attrs)


def _loads(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {}
    return raw if isinstance(raw, dict) else {}


def _edit(name: str, args: dict[str, Any]) -> tuple[str, str] | None:
    """``(path, verbatim text)`` for an edit tool's call, else ``None``."""
    if name.lower() not in EDIT_TOOLS:
        return None
    patch = args.get("patch", args.get("input"))
    if isinstance(patch, str) and "*** Begin Patch" in patch:
        paths = patch_paths(patch)
        return (paths[0] if paths else "", patch)
    path = next((str(args[k]) for k in _PATH_KEYS if isinstance(args.get(k), str)), None)
    if path is None:
        return None
    old = args.get("old_string", args.get("old_str"))
    new = args.get("new_string", args.get("new_str"))
    if isinstance(old, str) or isinstance(new, str):
        return path, render_edit(name, path, str(old or ""), str(new or ""))
    written = args.get("content", args.get("file_text", args.get("contents")))
    return path, render_edit(name, path, written=str(written or ""))


def _result(position: str, message: dict[str, Any], text: str, ts: str | None,
            calls: dict[str, ToolCall]) -> Draft:
    call_id = message.get("tool_call_id") or message.get("name")
    call = calls.get(str(call_id))
    code = _stated_exit_code(text)
    attrs = result_attrs(call, text, None if code is None else code != 0, code)
    if message.get("tool_call_id"):
        attrs["tool_call_id"] = message["tool_call_id"]
    name = call.name if call else message.get("name")
    return Draft(position, "tool", result_kind(call), text, ts,
                 name if isinstance(name, str) else None, attrs)


def _stated_exit_code(text: str) -> int | None:
    data = _loads(text) if text.startswith("{") else {}
    code = data.get("exit_code", data.get("returncode"))
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    return exit_code_in(text[:300])

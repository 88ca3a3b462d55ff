"""Codex CLI session JSONL (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``: ``session_meta`` (id, cwd) and
``response_item`` whose payload is a ``message`` / ``reasoning`` / ``function_call`` /
``function_call_output`` / ``custom_tool_call`` / ``local_shell_call`` item. Older
rollouts hold the items themselves, one a line. Shell calls become ``tool_call`` (their
output ``test_result`` when the command runs tests, with ``attrs.exit_code``);
``apply_patch`` (a tool of its own or ``shell ["apply_patch", PATCH]``) becomes
``file_edit`` with ``attrs.path``. ``event_msg`` / ``turn_context`` lines repeat what
the response items say and are skipped (counted).
"""

from __future__ import annotations

import posixpath
import shlex
from typing import Any

import orjson

from breadcrumb.importers.common import (
    Draft,
    Parsed,
    ToolCall,
    exit_code_in,
    is_test_command,
    parse_ts,
    patch_paths,
    result_attrs,
    result_kind,
)

ITEM_TYPES = frozenset({"message", "reasoning", "function_call", "function_call_output",
                        "custom_tool_call", "custom_tool_call_output", "local_shell_call"})
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md",
                     "<permissions instructions>")
_SHELLS = frozenset({"bash", "/bin/bash", "sh", "/bin/sh", "zsh", "/bin/zsh"})


def parse(records: list[tuple[int, Any]]) -> Parsed:
    """Drafts for ``(line_number, record)`` pairs of one rollout file."""
    parsed = Parsed(drafts=[], agent="codex")
    calls: dict[str, ToolCall] = {}
    for line, record in records:
        item, ts = _unwrap(record, parsed)
        if item is None:
            continue
        draft = _item(str(line), item, ts, calls)
        if draft is None:
            parsed.skipped[f"empty {item.get('type')}"] += 1
        else:
            parsed.drafts.append(draft)
    return parsed


def _unwrap(record: Any, parsed: Parsed) -> tuple[dict[str, Any] | None, str | None]:
    if not isinstance(record, dict):
        parsed.skipped["not an object"] += 1
        return None, None
    ts = parse_ts(record.get("timestamp"))
    payload = record.get("payload")
    kind = record.get("type")
    if kind == "session_meta" and isinstance(payload, dict) or "instructions" in record:
        _session_facts(parsed, payload if isinstance(payload, dict) else record)
        return None, None
    if kind == "response_item" and isinstance(payload, dict):
        record = payload
    if record.get("type") not in ITEM_TYPES:
        parsed.skipped[f"record type {kind}"] += 1
        return None, None
    return record, ts


def _session_facts(parsed: Parsed, meta: dict[str, Any]) -> None:
    if isinstance(meta.get("id"), str):
        parsed.session_id = meta["id"]
    cwd = meta.get("cwd")
    if isinstance(cwd, str) and cwd.strip("/"):
        parsed.project = posixpath.basename(cwd.rstrip("/"))[:128]


def _item(position: str, item: dict[str, Any], ts: str | None,
          calls: dict[str, ToolCall]) -> Draft | None:
    kind = item["type"]
    if kind == "message":
        return _message(position, item, ts)
    if kind == "reasoning":
        text = "\n".join(_texts(item.get("summary")))
        return Draft(position, "assistant", "note", text, ts, None,
                     {"reasoning": True}) if text else None
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        return _call(position, item, ts, calls)
    return _output(position, item, ts, calls)


def _texts(parts: Any) -> list[str]:
    if isinstance(parts, str):
        return [parts]
    return [str(p["text"]) for p in parts or [] if isinstance(p, dict)
            and isinstance(p.get("text"), str) and p["text"]]


def _message(position: str, item: dict[str, Any], ts: str | None) -> Draft | None:
    text = "\n".join(_texts(item.get("content")))
    if not text:
        return None
    role = item.get("role")
    if role in ("developer", "system") or (role == "user" and text.startswith(
            _CONTEXT_PREFIXES)):
        return Draft(position, "system", "note", text, ts)
    return Draft(position, "assistant" if role == "assistant" else "user", "message", text, ts)


def _call(position: str, item: dict[str, Any], ts: str | None,
          calls: dict[str, ToolCall]) -> Draft:
    name = str(item.get("name") or item["type"])
    args = _arguments(item)
    patch = _patch_of(name, item, args)
    command = None if patch is not None else _command_of(args)
    call = ToolCall("apply_patch" if patch is not None else name, command,
                    is_test_command(command))
    call_id = item.get("call_id") or item.get("id")
    calls[str(call_id)] = call
    attrs: dict[str, Any] = {"call_id": call_id} if call_id else {}
    if patch is not None:
        paths = patch_paths(patch)
        attrs.update({"path": paths[0] if paths else "", "paths": paths})
        return Draft(position, "assistant", "file_edit", patch, ts, "apply_patch", attrs)
    if command is not None:
        return Draft(position, "assistant", "tool_call", command, ts, name,
                     {**attrs, "command": command})
    raw = item.get("arguments", item.get("input", ""))
    return Draft(position, "assistant", "tool_call", raw if isinstance(raw, str) else
                 orjson.dumps(raw).decode(), ts, name, attrs)


def _arguments(item: dict[str, Any]) -> dict[str, Any]:
    if isinstance(item.get("action"), dict):  # local_shell_call
        return dict(item["action"])
    raw = item.get("arguments")
    if isinstance(raw, str):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {}
    return raw if isinstance(raw, dict) else {}


def _patch_of(name: str, item: dict[str, Any], args: dict[str, Any]) -> str | None:
    if name == "apply_patch":
        text = item.get("input") if isinstance(item.get("input"), str) else args.get("input")
        return text if isinstance(text, str) else None
    command = args.get("command")
    if isinstance(command, list) and len(command) >= 2 and command[0] == "apply_patch":
        return str(command[1])
    script = _command_of(args) or ""
    if script.lstrip().startswith("apply_patch") and "*** Begin Patch" in script:
        start = script.index("*** Begin Patch")
        end = script.find("*** End Patch", start)
        return script[start: end + len("*** End Patch")] if end >= 0 else script[start:]
    return None


def _command_of(args: dict[str, Any]) -> str | None:
    command = args.get("command", args.get("cmd"))
    if isinstance(command, str):
        return command
    if isinstance(command, list) and all(isinstance(c, str) for c in command) and command:
        if len(command) == 3 and command[0] in _SHELLS and command[1] in ("-lc", "-c"):
            return command[2]
        return shlex.join(command)
    return None


def _output(position: str, item: dict[str, Any], ts: str | None,
            calls: dict[str, ToolCall]) -> Draft:
    call_id = item.get("call_id")
    call = calls.get(str(call_id))
    text, code = _output_text(item.get("output"))
    if code is None:
        code = exit_code_in(text[:300])
    attrs = result_attrs(call, text, None if code is None else code != 0, code)
    if call_id:
        attrs["call_id"] = call_id
    kind = result_kind(call) if call is None or call.name != "apply_patch" else "tool_result"
    return Draft(position, "tool", kind, text, ts, call.name if call else None, attrs)


def _output_text(output: Any) -> tuple[str, int | None]:
    """The tool's output verbatim, unwrapped from ``{"output", "metadata": {"exit_code"}}``."""
    if isinstance(output, dict):
        data: Any = output
    elif isinstance(output, str) and output.startswith("{"):
        try:
            data = orjson.loads(output)
        except orjson.JSONDecodeError:
            return output, None
    else:
        return (output if isinstance(output, str) else orjson.dumps(output).decode()), None
    if not isinstance(data, dict) or not isinstance(data.get("output"), str):
        return (output if isinstance(output, str) else orjson.dumps(output).decode()), None
    meta = data.get("metadata")
    code = meta.get("exit_code") if isinstance(meta, dict) else None
    return data["output"], code if isinstance(code, int) else None

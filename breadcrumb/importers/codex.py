"""Codex CLI session JSONL (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``: ``session_meta`` (id, cwd) and
``response_item`` whose payload is a ``message`` / ``reasoning`` / ``function_call`` /
``function_call_output`` / ``custom_tool_call`` / ``local_shell_call`` item. Older
rollouts hold the items themselves, one a line. Shell calls become ``tool_call`` (their
output ``test_result`` when the command runs tests, with ``attrs.exit_code``);
``apply_patch`` (a tool of its own or ``shell ["apply_patch", PATCH]``) becomes
``file_edit`` with ``attrs.path``. ``event_msg`` / ``turn_context`` lines repeat what
the response items say and are skipped (counted), except ``patch_apply_end``: a change
no call recorded as a patch becomes a ``file_edit`` with its diff.

Codex ≥ 0.144 code mode (``codex_exec.py``): an ``exec`` cell becomes one ``tool_call``
per ``tools.exec_command`` and one ``file_edit`` per patch literal (unescaped, verbatim);
its output, or the ``wait`` output that finishes its cell, is the result (a
``test_result`` when a command ran tests; an ``{"exit_code", "output"}`` object the
script printed is unwrapped into its lines, ``attrs.json_unwrapped``). A cell still
running is a ``tool_result``.

A ``compacted`` record is a note; a record or response item of a type not known here
is a note counted in ``Parsed.unknown``. What ``session_meta`` says of the build
(``originator`` — ``codex_exec``, a desktop app —, ``cli_version``, ``model_provider``,
``source``) goes into the session end's ``attrs.session``; its ``cwd``, ``cli_version``,
``model_provider`` and ``git.branch``, and each ``turn_context``'s ``model`` (and ``cwd``), are
a settings note where first said and where they change (``common.settings_note``).

The thread is the rollout's own session id (``session_meta.id``); a subagent rollout
names its parent in ``attrs.parent_thread_id``. Positions are line numbers in the session.
"""

from __future__ import annotations

import posixpath
import shlex
from typing import Any

import orjson

from breadcrumb.importers import codex_exec
from breadcrumb.importers.common import (
    Draft,
    Parsed,
    ToolCall,
    add_settings,
    as_dict,
    exit_code_in,
    is_test_command,
    parse_ts,
    patch_paths,
    result_attrs,
    result_kind,
    unknown_note,
)

ITEM_TYPES = frozenset({"message", "reasoning", "function_call", "function_call_output",
                        "custom_tool_call", "custom_tool_call_output", "local_shell_call"})
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md",
                     "<permissions instructions>")
_TOP_SKIPPED = frozenset({"event_msg", "turn_context"})
_ITEM_SKIPPED = frozenset({"ghost_snapshot", "compaction", "compaction_summary"})
_META_KEYS = ("originator", "cli_version", "model_provider", "source", "model")
_SHELLS = frozenset({"bash", "/bin/bash", "sh", "/bin/sh", "zsh", "/bin/zsh"})


class _State:
    """What later records refer back to: calls by id, exec cells, recent patch paths."""

    def __init__(self) -> None:
        self.calls: dict[str, ToolCall] = {}
        self.cells: dict[str, ToolCall] = {}  # running exec cell id -> its exec call
        self.waits: dict[str, str] = {}  # wait call id -> cell id
        self.edited: list[str] = []  # paths patched since the last patch_apply_end


def parse(records: list[tuple[int, Any]]) -> Parsed:
    """Drafts for ``(line_number, record)`` pairs of one rollout file."""
    parsed = Parsed(drafts=[], agent="codex")
    state = _State()
    for line, record in records:
        other = _other_record(str(line), record, parsed)
        if other is not None:
            parsed.drafts.append(other)
            continue
        item, ts = _unwrap(str(line), record, parsed)
        if item is None:
            continue
        counted = parsed.skipped.total()
        drafts = _item(str(line), item, ts, state, parsed)
        if not drafts and parsed.skipped.total() == counted:
            parsed.skipped[f"empty {item.get('type')}"] += 1
        parsed.drafts.extend(drafts)
    return parsed


def _other_record(position: str, record: Any, parsed: Parsed) -> Draft | None:
    """A ``compacted`` summary as a note; a record or item type not known here as an
    unknown note (counted); ``None`` for everything the item path reads or skips."""
    if not isinstance(record, dict) or "payload" not in record:
        return None
    kind, payload = record.get("type"), record.get("payload")
    ts = parse_ts(record.get("timestamp"))
    if kind == "compacted" and isinstance(payload, dict):
        text = payload.get("message")
        return Draft(position, "system", "note", str(text or ""), ts,
                     attrs={"compacted": True}) if text else None
    if kind == "response_item" and isinstance(payload, dict):
        item = payload.get("type")
        if item in ITEM_TYPES or item in _ITEM_SKIPPED:
            return None
        return unknown_note(parsed, position, f"item type {item}", payload, ts)
    if kind in _TOP_SKIPPED or kind == "session_meta":
        return None
    return unknown_note(parsed, position, f"record type {kind}", record, ts)


def _unwrap(position: str, record: Any,
            parsed: Parsed) -> tuple[dict[str, Any] | None, str | None]:
    if not isinstance(record, dict):
        parsed.skipped["not an object"] += 1
        return None, None
    ts = parse_ts(record.get("timestamp"))
    payload = record.get("payload")
    kind = record.get("type")
    if kind == "session_meta" and isinstance(payload, dict) or "instructions" in record:
        _session_facts(parsed, payload if isinstance(payload, dict) else record, position,
                       ts or parse_ts(as_dict(payload).get("timestamp")))
        return None, None
    if kind == "turn_context" and isinstance(payload, dict):  # each turn's model and cwd
        add_settings(parsed, position, ts, model=payload.get("model"),
                     working_directory=payload.get("cwd"))
    if kind == "event_msg" and isinstance(payload, dict) and payload.get(
            "type") == "patch_apply_end":
        return payload, ts
    if kind == "response_item" and isinstance(payload, dict):
        record = payload
    if record.get("type") not in ITEM_TYPES:
        parsed.skipped[f"record type {kind}"] += 1
        return None, None
    return record, ts


def _session_facts(parsed: Parsed, meta: dict[str, Any], position: str,
                   ts: str | None) -> None:
    if parsed.session_id is not None:  # a resumed or forked rollout repeats older metas
        return
    git = as_dict(meta.get("git"))
    add_settings(parsed, position, ts, model=meta.get("model"),
                 provider=meta.get("model_provider"), agent_version=meta.get("cli_version"),
                 working_directory=meta.get("cwd"), git_branch=git.get("branch"))
    own = meta.get("id") if isinstance(meta.get("id"), str) else meta.get("session_id")
    parent = meta.get("parent_thread_id")
    if isinstance(parent, str) and parent:
        parsed.parent_thread_id = parent
    if isinstance(own, str) and own:
        parsed.session_id = own
        if own == parent:  # a subagent sharing its parent's id: name it apart
            name = meta.get("agent_nickname") or meta.get("agent_role") or "subagent"
            parsed.session_id = f"{own}/{name}"
    for key in _META_KEYS:
        if isinstance(meta.get(key), str | int) and meta[key] != "":
            parsed.meta[key] = meta[key]
    cwd = meta.get("cwd")
    if isinstance(cwd, str) and cwd.strip("/"):
        parsed.project = posixpath.basename(cwd.rstrip("/"))[:128]


def _item(position: str, item: dict[str, Any], ts: str | None, state: _State,
          parsed: Parsed) -> list[Draft]:
    kind = item["type"]
    if kind == "message":
        return _some(_message(position, item, ts))
    if kind == "reasoning":
        text = "\n".join(_texts(item.get("summary")))
        return [Draft(position, "assistant", "note", text, ts, None,
                      {"reasoning": True})] if text else []
    if kind == "patch_apply_end":
        return _some(_patch_end(position, item, ts, state, parsed))
    if kind == "custom_tool_call" and item.get("name") == "exec":
        return _exec(position, item, ts, state)
    if kind == "function_call" and item.get("name") == "wait":
        _wait(item, state)
        parsed.skipped["wait call"] += 1
        return []
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        draft = _call(position, item, ts, state.calls)
        if draft.kind == "file_edit":
            state.edited += draft.attrs.get("paths", [])
        return [draft]
    return [_output(position, item, ts, state)]


def _some(draft: Draft | None) -> list[Draft]:
    return [] if draft is None else [draft]


def _exec(position: str, item: dict[str, Any], ts: str | None, state: _State) -> list[Draft]:
    """One ``tool_call`` per command and one ``file_edit`` per patch of an exec cell."""
    code = str(item.get("input") or "")
    found = codex_exec.read_code(code)
    call_id = item.get("call_id") or item.get("id")
    command = "\n".join(found.commands) or None
    state.calls[str(call_id)] = ToolCall("exec", command,
                                         any(is_test_command(c) for c in found.commands))
    base: dict[str, Any] = {"call_id": call_id} if call_id else {}
    drafts = [Draft(f"{position}.c{n}", "assistant", "tool_call", cmd, ts, "exec_command",
                    {**base, "command": cmd}) for n, cmd in enumerate(found.commands)]
    for n, patch in enumerate(found.patches):
        paths = patch_paths(patch)
        state.edited += paths
        drafts.append(Draft(f"{position}.p{n}", "assistant", "file_edit", patch, ts,
                            "apply_patch", {**base, "path": paths[0] if paths else "",
                                            "paths": paths}))
    if not drafts:  # code that runs no command and no patch: keep it as written
        drafts.append(Draft(position, "assistant", "tool_call", code, ts, "exec", base))
    return drafts


def _wait(item: dict[str, Any], state: _State) -> None:
    cell = _arguments(item).get("cell_id")
    if cell is not None and item.get("call_id"):
        state.waits[str(item["call_id"])] = str(cell)


def _patch_end(position: str, item: dict[str, Any], ts: str | None, state: _State,
               parsed: Parsed) -> Draft | None:
    """A ``file_edit`` for changes no recorded patch covers (else skipped, counted)."""
    raw = item.get("changes")
    changes: dict[str, Any] = raw if isinstance(raw, dict) else {}
    paths = [str(p) for p in changes]
    covered = all(any(p == e or p.endswith("/" + e.lstrip("/")) for e in state.edited)
                  for p in paths)
    state.edited = []
    if covered:
        parsed.skipped["patch_apply_end (patch already recorded)"] += 1
        return None
    parts = []
    for path, change in changes.items():
        change = change if isinstance(change, dict) else {}
        body = change.get("unified_diff") or change.get("content") or ""
        parts.append(f"*** {str(change.get('type', 'update')).title()} File: {path}\n{body}")
    attrs: dict[str, Any] = {"path": paths[0], "paths": paths, "success": bool(
        item.get("success"))}
    if item.get("call_id"):
        attrs["call_id"] = item["call_id"]
    return Draft(position, "assistant", "file_edit", "\n".join(parts), ts, "apply_patch",
                 attrs)


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


def _output(position: str, item: dict[str, Any], ts: str | None, state: _State) -> Draft:
    call_id = item.get("call_id")
    cell = state.waits.get(str(call_id))
    call = state.cells.get(cell) if cell is not None else state.calls.get(str(call_id))
    if call is not None and call.name == "exec":
        return _exec_output(position, item, ts, call, state, cell)
    text, code = _output_text(item.get("output"))
    if code is None:
        code = exit_code_in(text[:300])
    attrs = result_attrs(call, text, None if code is None else code != 0, code)
    if call_id:
        attrs["call_id"] = call_id
    kind = result_kind(call) if call is None or call.name != "apply_patch" else "tool_result"
    return Draft(position, "tool", kind, text, ts, call.name if call else None, attrs)


def _exec_output(position: str, item: dict[str, Any], ts: str | None, call: ToolCall,
                 state: _State, cell: str | None) -> Draft:
    """An exec (or wait) output: the result once the cell finished, else a running note."""
    raw = codex_exec.output_text(item.get("output"))
    status = codex_exec.status_of(raw)
    text = codex_exec.readable(raw)
    attrs: dict[str, Any] = {"call_id": item.get("call_id")} if item.get("call_id") else {}
    if text != raw:
        attrs["json_unwrapped"] = True  # the script printed {"exit_code", "output"}
    if cell is not None:
        attrs["cell_id"] = cell
    if status.state == "running":
        state.cells[str(status.cell_id)] = call
        attrs.update({"cell_id": status.cell_id, "running": True})
        if call.command is not None:
            attrs["command"] = call.command
        return Draft(position, "tool", "tool_result", text, ts, "exec", attrs)
    failed = True if status.state == "failed" else (
        None if status.exit_code is None else status.exit_code != 0)
    attrs.update(result_attrs(call, text, failed, status.exit_code))
    if status.exit_code is None and not failed:
        attrs.pop("exit_code", None)  # "Script completed" says nothing of the command's code
    return Draft(position, "tool", result_kind(call), text, ts, "exec", attrs)


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

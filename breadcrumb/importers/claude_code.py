"""Claude Code session JSONL (``~/.claude/projects/<project>/<sessionId>.jsonl``).

Records of ``type`` user / assistant / system carry ``message.content`` as a string or
an array of ``text`` / ``tool_use`` / ``tool_result`` blocks; ``toolUseResult`` holds
the tool's own result (``stdout`` / ``stderr`` for Bash). Bash calls become
``tool_call`` (their results ``test_result`` when the command runs tests), Edit /
Write / MultiEdit / NotebookEdit calls become ``file_edit`` with ``attrs.path``.
Thinking blocks, summaries, file-history snapshots and other bookkeeping records (mode,
permission-mode, last-prompt, queue-operation, …) are skipped (and counted); the 2.1.2xx
records ``custom-title`` / ``ai-title``, ``agent-name``, ``pr-link``, ``bridge-session``
and ``file-history-delta`` are notes; a record type not known here is a note counted in
``Parsed.unknown``.

What the records say the session runs with (``version``, ``cwd``, ``gitBranch``, an
assistant message's ``model``) is a settings note where it is first said and where it
changes (``common.settings_note``).

Positions (hence event ids) come from each record's own ``uuid``. A record with
``isSidechain`` (a subagent: ``<session>/subagents/agent-<id>.jsonl`` in 2.x, inline in
older versions) goes to its own thread ``<sessionId>/agent-<agentId>``, linked to the
session by ``attrs.parent_thread_id``. A Bash run sent to the background ("Command running
in background with ID: …") is a ``tool_result``, not a test result; its later
``BashOutput`` / ``TaskOutput`` read is the test result once the shell has completed.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from breadcrumb.importers.common import (
    Draft,
    Parsed,
    ToolCall,
    add_settings,
    as_dict,
    as_json_text,
    background_id,
    is_test_command,
    parse_ts,
    render_edit,
    result_attrs,
    result_kind,
    unknown_note,
)

SHELL_TOOLS = frozenset({"Bash"})
OUTPUT_TOOLS = frozenset({"BashOutput", "TaskOutput"})  # read a backgrounded shell
_STATUS_RE = re.compile(r"<status>(\w+)</status>")
_EXIT_RE = re.compile(r"<exit_code>(-?\d+)</exit_code>")
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
#: 2.1.2xx records kept as notes: the field holding their value, and its label
_META_NOTES = {"custom-title": ("customTitle", "title"), "ai-title": ("aiTitle", "title"),
               "agent-name": ("agentName", "agent name"), "pr-link": ("prUrl", "pull request"),
               "bridge-session": ("bridgeSessionId", "bridge session"),
               "file-history-delta": ("trackingPath", "file history")}
#: bookkeeping records that repeat or steer the session: skipped, counted
_BOOKKEEPING = frozenset({"system", "summary", "file-history-snapshot", "last-prompt", "mode",
                          "permission-mode", "queue-operation", "atis-latch", "cost-state",
                          "frame-link", "attachment", "history-suppression", "worktree-state",
                          "agent-color", "agent-setting", "tag", "progress",
                          "artifact-comment-monitor", "artifact-autoreact-ledger"})
_META_PREFIXES = ("<command-name>", "<local-command-stdout>", "<command-message>",
                  "Caveat: The messages below")
#: who wrote a session record's words: the model titles a session (``ai-title``) and
#: recaps it for a returning user (``system`` / ``away_summary``), the user names it
#: (``custom-title``); every other record is the harness's own (role ``system``)
_SPEAKERS = {"ai-title": "assistant", "away_summary": "assistant", "custom-title": "user"}


def parse(records: list[tuple[int, Any]]) -> Parsed:
    """Drafts for ``(line_number, record)`` pairs of one session file."""
    parsed = Parsed(drafts=[], agent="claude-code")
    calls: dict[str, ToolCall] = {}
    for line, record in records:
        if not isinstance(record, dict):
            parsed.skipped["not an object"] += 1
            continue
        _session_facts(parsed, record)
        kind = record.get("type")
        if kind in ("user", "assistant", "system"):
            _settings(parsed, _position(line, record), record)
        before = len(parsed.drafts)
        if kind in ("user", "assistant"):
            parsed.drafts.extend(_message(line, record, calls, parsed))
        elif kind == "system" and isinstance(record.get("content"), str):
            speaker = _SPEAKERS.get(str(record.get("subtype")), "system")
            parsed.drafts.append(Draft(_position(line, record), speaker, "note",
                                       record["content"], parse_ts(record.get("timestamp")),
                                       attrs=_subtype(record)))
        elif kind in _META_NOTES:
            parsed.drafts.append(_meta_note(_position(line, record), str(kind), record, parsed))
        elif kind in _BOOKKEEPING:
            parsed.skipped[f"record type {kind}"] += 1
        else:
            parsed.drafts.append(unknown_note(parsed, _position(line, record),
                                              f"record type {kind}", record,
                                              parse_ts(record.get("timestamp"))))
        for draft in parsed.drafts[before:]:
            draft.subthread = _subthread(record)
    return parsed


def _meta_note(position: str, kind: str, record: dict[str, Any], parsed: Parsed) -> Draft:
    """A 2.1.2xx session record that says something: title, agent name, PR, bridge, file."""
    field_name, label = _META_NOTES[kind]
    value = record.get(field_name)
    if kind == "file-history-delta":
        backup = record.get("backup") if isinstance(record.get("backup"), dict) else {}
        value = f"{value} (version {backup.get('version')})" if backup else value
    elif kind == "pr-link" and record.get("prNumber") is not None:
        value = f"#{record['prNumber']} {value}"
    if kind in ("custom-title", "ai-title", "agent-name") and isinstance(value, str):
        parsed.meta[kind] = value
    return Draft(position, _SPEAKERS.get(kind, "system"), "note", f"{label}: {value}",
                 parse_ts(record.get("timestamp")), attrs={"record_type": kind})


def _position(line: int, record: dict[str, Any]) -> str:
    """The record's own uuid (stable whatever the file is called), else its line."""
    uid = record.get("uuid")
    return uid if isinstance(uid, str) and uid else str(line)


def _subthread(record: dict[str, Any]) -> str | None:
    if record.get("isSidechain") is not True:
        return None
    agent = record.get("agentId")
    return f"agent-{agent}" if isinstance(agent, str) and agent else "sidechain"


def _session_facts(parsed: Parsed, record: dict[str, Any]) -> None:
    if parsed.session_id is None and isinstance(record.get("sessionId"), str):
        parsed.session_id = record["sessionId"]
    cwd = record.get("cwd")
    if parsed.project is None and isinstance(cwd, str) and cwd.strip("/"):
        parsed.project = posixpath.basename(cwd.rstrip("/"))[:128]


def _settings(parsed: Parsed, position: str, record: dict[str, Any]) -> None:
    """What every record says the session runs with — ``version``, ``cwd``, ``gitBranch``,
    and an assistant message's ``model`` — as a settings note where it is first said or
    changes (a ``/model`` switch, a ``cd`` into another folder, an update)."""
    message = as_dict(record.get("message"))
    model = message.get("model") if record.get("type") == "assistant" else None
    add_settings(parsed, position, parse_ts(record.get("timestamp")), _subthread(record),
                 model=model, agent_version=record.get("version"),
                 working_directory=record.get("cwd"), git_branch=record.get("gitBranch"))


def _subtype(record: dict[str, Any]) -> dict[str, Any]:
    return {"subtype": record["subtype"]} if isinstance(record.get("subtype"), str) else {}


def _message(line: int, record: dict[str, Any], calls: dict[str, ToolCall],
             parsed: Parsed) -> list[Draft]:
    message = record.get("message")
    if not isinstance(message, dict):
        parsed.skipped["record without message"] += 1
        return []
    ts = parse_ts(record.get("timestamp"))
    role = "assistant" if record["type"] == "assistant" else "user"
    content = message.get("content")
    if isinstance(content, str):
        return [_text(_position(line, record), role, content, ts, record)]
    drafts: list[Draft] = []
    for number, block in enumerate(content if isinstance(content, list) else []):
        position = f"{_position(line, record)}.{number}"
        draft = _block(position, role, block, ts, record, calls)
        if draft is None:
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            parsed.skipped[f"{kind} block"] += 1
        else:
            drafts.append(draft)
    return drafts


def _text(position: str, role: str, text: str, ts: str | None,
          record: dict[str, Any]) -> Draft:
    if role == "user" and (record.get("isMeta") or text.startswith(_META_PREFIXES)):
        return Draft(position, "system", "note", text, ts)
    return Draft(position, role, "message", text, ts)


def _block(position: str, role: str, block: Any, ts: str | None, record: dict[str, Any],
           calls: dict[str, ToolCall]) -> Draft | None:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
        return _text(position, role, block["text"], ts, record)
    if kind == "tool_use":
        return _tool_use(position, block, ts, calls)
    if kind == "tool_result":
        return _tool_result(position, block, ts, record, calls)
    return None  # thinking, redacted_thinking, image, empty text


def _tool_use(position: str, block: dict[str, Any], ts: str | None,
              calls: dict[str, ToolCall]) -> Draft:
    name = str(block.get("name") or "tool")
    raw_input = block.get("input")
    args: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    command = args.get("command") if name in SHELL_TOOLS else None
    call = ToolCall(name, command if isinstance(command, str) else None)
    call.is_test = is_test_command(call.command) and not args.get("run_in_background")
    if name in OUTPUT_TOOLS:  # reading a backgrounded shell: its command, if known
        shell = calls.get(f"shell:{args.get('bash_id') or args.get('task_id')}")
        if shell is not None:
            call = ToolCall(name, shell.command, shell.is_test)
    calls[str(block.get("id"))] = call
    attrs: dict[str, Any] = {"tool_use_id": block.get("id")} if block.get("id") else {}
    if name in EDIT_TOOLS:
        path = str(args.get("file_path") or args.get("notebook_path") or "")
        return Draft(position, "assistant", "file_edit", _edit_text(name, path, args), ts,
                     name, {**attrs, "path": path})
    if call.command is not None and name in SHELL_TOOLS:
        return Draft(position, "assistant", "tool_call", call.command, ts, name,
                     {**attrs, "command": call.command})
    return Draft(position, "assistant", "tool_call", as_json_text(raw_input), ts, name, attrs)


def _edit_text(name: str, path: str, args: dict[str, Any]) -> str:
    if name == "Write":
        return render_edit(name, path, written=str(args.get("content", "")))
    if name == "NotebookEdit":
        return render_edit(name, path, written=str(args.get("new_source", "")))
    if name == "MultiEdit" and isinstance(args.get("edits"), list):
        parts = [render_edit(name, path, str(e.get("old_string", "")),
                             str(e.get("new_string", "")))
                 for e in args["edits"] if isinstance(e, dict)]
        return "\n".join(parts)
    return render_edit(name, path, str(args.get("old_string", "")),
                       str(args.get("new_string", "")))


def _tool_result(position: str, block: dict[str, Any], ts: str | None,
                 record: dict[str, Any], calls: dict[str, ToolCall]) -> Draft:
    call = calls.get(str(block.get("tool_use_id")))
    text = _result_text(block.get("content"), record.get("toolUseResult"))
    failed = bool(block.get("is_error"))
    kind_call, code = _finished(call, text, calls)
    attrs = result_attrs(kind_call, text, failed, code)
    if block.get("tool_use_id"):
        attrs["tool_use_id"] = block["tool_use_id"]
    extra = record.get("toolUseResult")
    if isinstance(extra, dict) and extra.get("interrupted"):
        attrs["interrupted"] = True
    if kind_call is None and call is not None and call.command is not None:
        attrs.update({"command": call.command, "background": True})
        attrs.pop("exit_code", None)
    return Draft(position, "tool", result_kind(kind_call), text, ts,
                 call.name if call else None, attrs)


def _finished(call: ToolCall | None, text: str,
              calls: dict[str, ToolCall]) -> tuple[ToolCall | None, int | None]:
    """The call a result reports on, or ``None`` while its shell still runs in the
    background (not a test result yet); and the exit code a shell read states."""
    if call is None:
        return None, None
    if call.name in SHELL_TOOLS:
        shell_id = background_id(text)
        if shell_id is not None:
            calls[f"shell:{shell_id}"] = ToolCall(call.name, call.command,
                                                  is_test_command(call.command))
            return None, None
        return call, None
    if call.name in OUTPUT_TOOLS:
        status = _STATUS_RE.search(text)
        if status is not None and status.group(1) == "running":
            return None, None
        code = _EXIT_RE.search(text)
        return call, int(code.group(1)) if code else None
    return call, None


def _result_text(content: Any, tool_result: Any) -> str:
    """The output the model saw, verbatim; Bash stdout/stderr when the block is empty."""
    if isinstance(content, list):
        parts = [str(b.get("text", "")) if isinstance(b, dict) and b.get("type") == "text"
                 else "[image]" for b in content]
        text = "\n".join(parts)
    else:
        text = content if isinstance(content, str) else ""
    if not text and isinstance(tool_result, dict):
        streams = [tool_result.get("stdout"), tool_result.get("stderr")]
        text = "\n".join(s for s in streams if isinstance(s, str) and s)
    return text

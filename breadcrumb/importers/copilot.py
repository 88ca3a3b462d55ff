"""GitHub Copilot CLI agent sessions (``~/.copilot/session-state/<sessionId>/events.jsonl``).

Each line is an event ``{type, data, id, timestamp, parentId, agentId?}``:
``session.start`` (``data.sessionId``, ``data.context.cwd``, ``copilotVersion``),
``user.message`` (``content``), ``assistant.message`` (``content``, ``toolRequests``
``[{toolCallId, name, arguments}]``), ``tool.execution_start`` and
``tool.execution_complete`` (``toolCallId``, ``success``, ``result: {content,
detailedContent}``, ``error``). A bash result ends with ``<exited with exit code N>``;
an edit's ``detailedContent`` holds its diff (kept verbatim after the content).

Sub-agents: events a sub-agent wrote carry the envelope ``agentId`` (newer builds) or
``data.parentToolCallId`` (older builds); either way they go to their own thread
``<session>/agent-<id>`` linked to the session. ``subagent.*``, ``session.info`` /
``warning`` / ``error``, ``abort`` and ``session.task_complete`` are notes; lifecycle
events (turn start / end, usage, model and mode changes, hooks, compaction markers) are
skipped and counted; any other type is an unknown note. Positions are event ids.
``session.start``'s ``copilotVersion``, ``context.cwd`` and ``context.branch``, and the model a
``session.model_change`` (still counted as skipped) or an event's ``data.model`` names, are a
settings note where first said and where they change (``common.settings_note``).
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
    parse_ts,
    unknown_note,
)
from breadcrumb.importers.toolcalls import call_draft, result_draft

_EXITED_RE = re.compile(r"<exited with exit code (-?\d+)>")
_SKIPPED = frozenset({
    "assistant.turn_start", "assistant.turn_end", "assistant.usage", "assistant.intent",
    "assistant.reasoning", "session.model_change", "session.mode_changed",
    "session.usage_info", "session.usage_checkpoint", "session.shutdown", "session.idle",
    "session.compaction_start", "session.tools_updated", "session.context_changed",
    "session.plan_changed", "session.title_changed", "session.resume", "hook.start",
    "hook.end", "permission.requested", "permission.completed", "system.message",
    "tool.execution_partial_result", "tool.execution_progress", "skill.invoked",
    "session.session_limits_changed", "subagent.selected", "subagent.deselected",
    "tool.user_requested", "user_input.requested", "user_input.completed",
    "elicitation.requested", "elicitation.completed", "external_tool.requested",
    "external_tool.completed", "assistant.message_delta", "assistant.reasoning_delta",
    "assistant.streaming_delta"})
_NOTES = frozenset({"session.info", "session.warning", "session.error", "abort",
                    "session.task_complete", "subagent.started", "subagent.completed",
                    "subagent.failed", "session.compaction_complete"})


def looks_like_record(record: Any) -> bool:
    """An ``events.jsonl`` line: a dotted event type with a ``data`` object."""
    return (isinstance(record, dict) and isinstance(record.get("type"), str)
            and "." in record["type"] and isinstance(record.get("data"), dict)
            and "id" in record)


def parse(records: list[tuple[int, Any]]) -> Parsed:
    """Drafts for ``(line, event)`` pairs of one session."""
    parsed = Parsed(drafts=[], agent="copilot")
    calls: dict[str, ToolCall] = {}
    requested: set[str] = set()
    for line, event in records:
        if not isinstance(event, dict) or not isinstance(event.get("data"), dict):
            parsed.skipped["not an event"] += 1
            continue
        before = len(parsed.drafts)
        sub = _subthread(event)
        _settings(parsed, str(event.get("id") or line), event, sub)
        _event(str(event.get("id") or line), event, parsed, calls, requested)
        for draft in parsed.drafts[before:]:
            draft.subthread = sub
    return parsed


def _settings(parsed: Parsed, position: str, event: dict[str, Any], sub: str | None) -> None:
    """What an event says the session runs with: ``session.start``'s ``copilotVersion``
    and ``context`` (``cwd``, ``branch``), the model a ``session.model_change`` switches to
    or an event names (``data.model``) — where first said and where it changes."""
    data = event["data"]
    start = event.get("type") == "session.start"
    context = as_dict(data.get("context")) if start else {}
    model = next((data[k] for k in ("newModel", "selectedModel", "model")
                  if isinstance(data.get(k), str) and data[k]), None)
    add_settings(parsed, position, parse_ts(event.get("timestamp")), sub, model=model,
                 agent_version=data.get("copilotVersion") if start else None,
                 working_directory=context.get("cwd"), git_branch=context.get("branch"))


def _subthread(event: dict[str, Any]) -> str | None:
    agent = event.get("agentId")
    if isinstance(agent, str) and agent:
        return f"agent-{agent}"
    parent = event["data"].get("parentToolCallId")
    return f"agent-{parent}" if isinstance(parent, str) and parent else None


def _event(position: str, event: dict[str, Any], parsed: Parsed,
           calls: dict[str, ToolCall], requested: set[str]) -> None:
    kind, data = event.get("type"), event["data"]
    ts = parse_ts(event.get("timestamp"))
    drafts = parsed.drafts
    if kind == "session.start":
        _start(parsed, data)
    elif kind == "user.message":
        text = data.get("content")
        if isinstance(text, str) and text:
            drafts.append(Draft(position, "user", "message", text, ts))
    elif kind == "assistant.message":
        text = data.get("content")
        if isinstance(text, str) and text:
            drafts.append(Draft(position, "assistant", "message", text, ts))
        for number, request in enumerate(data.get("toolRequests") or []):
            if isinstance(request, dict):
                call_id = str(request.get("toolCallId") or f"{position}.{number}")
                requested.add(call_id)
                drafts.append(call_draft(f"{position}.{number}",
                                         str(request.get("name") or "tool"),
                                         request.get("arguments"), ts, call_id, calls))
    elif kind == "tool.execution_start":
        call_id = str(data.get("toolCallId"))
        if call_id not in requested:  # a call the user asked for, or no request recorded
            requested.add(call_id)
            drafts.append(call_draft(position, str(data.get("toolName") or "tool"),
                                     data.get("arguments"), ts, call_id, calls))
        else:
            parsed.skipped["tool.execution_start (call already recorded)"] += 1
    elif kind == "tool.execution_complete":
        drafts.append(_complete(position, data, ts, calls))
    elif kind in _NOTES:
        drafts.append(Draft(position, "system", "note", _note_text(kind, data), ts,
                            attrs={"event_type": kind}))
    elif kind in _SKIPPED:
        parsed.skipped[str(kind)] += 1
    else:
        drafts.append(unknown_note(parsed, position, str(kind), event, ts))


def _start(parsed: Parsed, data: dict[str, Any]) -> None:
    if parsed.session_id is None and isinstance(data.get("sessionId"), str):
        parsed.session_id = data["sessionId"]
    context = as_dict(data.get("context"))
    cwd = context.get("cwd") or data.get("cwd")
    if parsed.project is None and isinstance(cwd, str) and cwd.strip("/"):
        parsed.project = posixpath.basename(cwd.rstrip("/"))[:128]
    for key in ("copilotVersion", "producer", "version"):
        if data.get(key) is not None:
            parsed.meta[key] = data[key]


def _complete(position: str, data: dict[str, Any], ts: str | None,
              calls: dict[str, ToolCall]) -> Draft:
    call_id = str(data.get("toolCallId"))
    result = as_dict(data.get("result"))
    content = str(result.get("content") or "")
    detailed = result.get("detailedContent")
    text: str = content
    if isinstance(detailed, str) and detailed and detailed != content:
        text = f"{content}\n{detailed}" if content else detailed
    error = data.get("error")
    if not text and error is not None:
        text = str(as_dict(error).get("message", "")) if isinstance(error, dict) else str(error)
    match = _EXITED_RE.search(text)
    code = int(match.group(1)) if match else None
    failed = None if code is not None else data.get("success") is False
    return result_draft(position, calls.get(call_id), text, ts, failed=failed,
                        exit_code=code, call_id=call_id)


def _note_text(kind: Any, data: dict[str, Any]) -> str:
    for key in ("message", "summary", "summaryContent", "reason", "error"):
        value = data.get(key)
        if isinstance(value, str) and value:
            name = data.get("agentDisplayName") or data.get("agentName")
            return f"{kind}: {name}: {value}" if name else f"{kind}: {value}"
    return f"{kind}: {as_json_text(data)[:2000]}"

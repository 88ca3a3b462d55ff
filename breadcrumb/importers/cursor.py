"""Cursor agent transcripts (``~/.cursor/projects/<project>/agent-transcripts/``).

Each line is ``{"role": "user" | "assistant", "message": {"content": [...]}}`` — blocks
``text``, ``thinking`` and ``tool_use`` ``{name, input}`` in the Anthropic shape — with
``{"type": "turn_ended", "status", "error"?}`` markers between turns. Cursor writes no
tool results and no ids, and times only on prompts (``<timestamp>…</timestamp>``, kept;
the events after a prompt follow it a second apart): tool calls become ``tool_call`` / ``file_edit``
(``Shell`` commands, ``StrReplace`` / ``Write`` / ``ApplyPatch`` edits verbatim), a user
prompt keeps its ``<user_query>`` text, a failed turn end is a note, a successful one is
skipped (counted). Positions are line numbers (and block numbers) — the thread id is a
digest of the first records, so a renamed copy is the same thread. A subagent transcript
(``<session>/subagents/<id>.jsonl``) is its own thread linked to its parent's.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from breadcrumb.importers.common import Draft, Parsed, ToolCall, unknown_note
from breadcrumb.importers.toolcalls import call_draft

_STAMP_RE = re.compile(r"<timestamp>\s*(.+?)\s*\(UTC([+-]\d{1,2})(?::?(\d\d))?\)\s*</timestamp>")


def prompt_time(text: str) -> str | None:
    """The time Cursor stamps on a prompt (``<timestamp>Monday, Sep 14, 2026, 10:02 AM
    (UTC+2)</timestamp>``) as RFC 3339, or ``None``."""
    match = _STAMP_RE.search(text)
    if match is None:
        return None
    hours, minutes = int(match.group(2)), int(match.group(3) or 0)
    offset = f"{'-' if hours < 0 else '+'}{abs(hours):02d}{minutes:02d}"
    try:
        moment = datetime.strptime(f"{match.group(1)} {offset}", "%A, %b %d, %Y, %I:%M %p %z")
    except ValueError:
        return None
    return moment.isoformat()


def looks_like_record(record: Any) -> bool:
    """A Cursor transcript line (role-nested, no envelope type)."""
    if not isinstance(record, dict):
        return False
    if record.get("type") == "turn_ended":
        return True
    return (record.get("role") in ("user", "assistant") and isinstance(record.get("message"),
                                                                      dict)
            and "type" not in record and "sessionId" not in record)


def parse(records: list[tuple[int, Any]]) -> Parsed:
    """Drafts for ``(line, record)`` pairs of one transcript."""
    parsed = Parsed(drafts=[], agent="cursor")
    calls: dict[str, ToolCall] = {}
    for line, record in records:
        if not isinstance(record, dict):
            parsed.skipped["not an object"] += 1
        elif record.get("type") == "turn_ended":
            if record.get("status") == "success":
                parsed.skipped["turn_ended success"] += 1
            else:
                text = f"turn ended: {record.get('status')}: {record.get('error') or ''}"
                parsed.drafts.append(Draft(str(line), "system", "note", text.rstrip(": "),
                                           attrs={"turn_status": record.get("status")}))
        elif looks_like_record(record):
            parsed.drafts.extend(_message(line, record, calls, parsed))
        else:
            kind = record.get("type") or "record without role"
            parsed.drafts.append(unknown_note(parsed, str(line), str(kind), record))
    return parsed


def _message(line: int, record: dict[str, Any], calls: dict[str, ToolCall],
             parsed: Parsed) -> list[Draft]:
    role = "user" if record["role"] == "user" else "assistant"
    content = record["message"].get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    drafts: list[Draft] = []
    for number, block in enumerate(content if isinstance(content, list) else []):
        position = f"{line}.{number}"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            stamp = prompt_time(block["text"]) if role == "user" else None
            drafts.append(Draft(position, role, "message", block["text"], stamp))
        elif kind == "tool_use":
            name = str(block.get("name") or "tool")
            call_id = block.get("id") if isinstance(block.get("id"), str) else position
            drafts.append(call_draft(position, name, block.get("input"), None, call_id, calls))
        else:
            parsed.skipped[f"{kind} block"] += 1
    return drafts

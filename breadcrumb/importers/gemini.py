"""Gemini CLI chat recordings (``~/.gemini/tmp/<project>/chats/``).

Two versions of one ``ConversationRecord``:

* **JSON** (before the JSONL migration): ``session-<time>-<id8>.json``, one document
  ``{sessionId, projectHash, startTime, lastUpdated, messages: [...]}`` rewritten on
  every turn.
* **JSONL** (append-only): ``session-<time>-<id8>.jsonl``; the first line is the metadata
  ``{sessionId, projectHash, startTime, lastUpdated, kind?, directories?}``, then message
  records (a message is appended again, whole, each time it changes — tool results,
  tokens), ``{"$set": {...}}`` metadata updates (``messages`` there is a checkpoint of
  the whole list) and ``{"$rewindTo": id}``. A subagent (``kind: "subagent"``) is written
  to ``chats/<parentSessionId>/<sessionId>.jsonl``.

A message is ``{id, timestamp, type, content}`` — ``content`` a string or a list of parts
``{text}`` — with ``type`` ``user`` / ``gemini`` / ``info`` / ``warning`` / ``error``;
``gemini`` messages carry ``toolCalls`` ``[{id, name, args, result, status, resultDisplay}]``
(``result`` a list of ``{functionResponse: {id, name, response: {output | error}}}``).

Each message text, each tool call and each tool result becomes one draft the first time
it is seen (positions ``<message id>``, ``<message id>.<call id>`` and ``….result``), so
the drafts of a growing file only ever grow at the end, and a rewritten message adds only
what is new. A ``$rewindTo`` is kept as a note (the rewound messages stay: they were said).
The ``model`` a ``gemini`` message names, and the first of the metadata's ``directories``
(else the project root ``~/.gemini/tmp/<slug>/.project_root`` names), are a settings note
where first said and where the model changes (``common.settings_note``).
"""

from __future__ import annotations

from typing import Any

from breadcrumb.importers.common import (
    Draft,
    Parsed,
    ToolCall,
    add_settings,
    parse_ts,
    unknown_note,
)
from breadcrumb.importers.toolcalls import call_draft, result_draft

_NOTE_TYPES = frozenset({"info", "warning", "error"})
_DONE = frozenset({"success", "error", "cancelled"})


def looks_like_document(document: Any) -> bool:
    """A whole-file Gemini CLI conversation record."""
    return (isinstance(document, dict) and isinstance(document.get("sessionId"), str)
            and isinstance(document.get("messages"), list)
            and ("projectHash" in document or "startTime" in document))


def looks_like_record(record: Any) -> bool:
    """A line of a Gemini CLI JSONL recording."""
    if not isinstance(record, dict):
        return False
    if "$set" in record or "$rewindTo" in record:
        return True
    if isinstance(record.get("sessionId"), str) and "projectHash" in record:
        return True
    return (record.get("type") == "gemini" and isinstance(record.get("id"), str)) or (
        record.get("type") == "user" and "id" in record and "content" in record
        and "message" not in record and "sessionId" not in record)


class _Reader:
    """Drafts for records in order, each text / call / result once."""

    def __init__(self) -> None:
        self.parsed = Parsed(drafts=[], agent="gemini-cli")
        self.seen: set[str] = set()
        self.calls: dict[str, ToolCall] = {}

    def meta(self, record: dict[str, Any], position: str = "session") -> None:
        """What the recording says of itself (``position``: its line, for a settings note)."""
        parsed = self.parsed
        if parsed.session_id is None and isinstance(record.get("sessionId"), str):
            parsed.session_id = record["sessionId"]
        dirs = record.get("directories")
        if parsed.project is None and isinstance(dirs, list) and dirs and isinstance(
                dirs[0], str):
            parsed.project = dirs[0].rstrip("/").rsplit("/", 1)[-1][:128] or None
        for key in ("kind", "projectHash", "summary"):
            if isinstance(record.get(key), str):
                parsed.meta[key] = record[key]
        if isinstance(dirs, list) and dirs:  # the folders the session works in, first the cwd
            add_settings(parsed, position, parse_ts(record.get("startTime")),
                         working_directory=dirs[0])

    def line(self, number: int, record: Any) -> None:
        if not isinstance(record, dict):
            self.parsed.skipped["not an object"] += 1
        elif isinstance(record.get("$rewindTo"), str):
            self.parsed.drafts.append(Draft(f"{number}.rewind", "system", "note",
                                            f"rewound to message {record['$rewindTo']}",
                                            attrs={"rewind_to": record["$rewindTo"]}))
        elif isinstance(record.get("$set"), dict):
            update = record["$set"]
            if isinstance(update.get("messages"), list):
                for message in update["messages"]:
                    self.message(message)
            if isinstance(update.get("summary"), str) and update["summary"]:
                self.once(f"summary:{update['summary']}", Draft(
                    f"{number}.summary", "system", "note", update["summary"],
                    attrs={"summary": True}))
            self.meta(update, str(number))
            self.parsed.skipped["$set update"] += 1
        elif isinstance(record.get("id"), str) and "type" in record:
            self.message(record)
        elif isinstance(record.get("sessionId"), str):
            self.meta(record, str(number))
        else:
            self.parsed.drafts.append(unknown_note(self.parsed, str(number), "gemini record",
                                                   record))

    def once(self, key: str, draft: Draft) -> None:
        if key not in self.seen:
            self.seen.add(key)
            self.parsed.drafts.append(draft)

    def message(self, message: Any) -> None:
        if not isinstance(message, dict) or not isinstance(message.get("id"), str):
            self.parsed.skipped["message without id"] += 1
            return
        mid, kind = message["id"], message.get("type")
        ts = parse_ts(message.get("timestamp"))
        text = _text(message.get("content"))
        if kind in ("user", "gemini"):
            role = "user" if kind == "user" else "assistant"
            if mid not in self.seen:  # the model that wrote it, where first named or changed
                add_settings(self.parsed, mid, ts, model=message.get("model"))
            if text:
                self.once(mid, Draft(mid, role, "message", text, ts))
            for call in message.get("toolCalls") or []:
                self.tool(mid, call, ts)
        elif kind in _NOTE_TYPES:
            if text:
                self.once(mid, Draft(mid, "system", "note", text, ts, attrs={"level": kind}))
        elif mid not in self.seen:
            self.seen.add(mid)
            self.parsed.drafts.append(unknown_note(self.parsed, mid, f"message type {kind}",
                                                   message, ts))

    def tool(self, mid: str, call: Any, ts: str | None) -> None:
        if not isinstance(call, dict):
            return
        cid = str(call.get("id") or call.get("name"))
        position = f"{mid}.{cid}"
        name = str(call.get("name") or "tool")
        when = parse_ts(call.get("timestamp")) or ts
        self.once(position, call_draft(position, name, call.get("args"), when, cid,
                                       self.calls))
        status = call.get("status")
        if status not in _DONE or f"{position}.result" in self.seen:
            return
        text = _result_text(call)
        if not text and status == "success" and call.get("result") is None:
            return  # not written yet
        draft = result_draft(f"{position}.result", self.calls.get(cid), text, when,
                             failed=None if status == "success" else True, call_id=cid,
                             name=name)
        draft.attrs["status"] = status
        self.once(f"{position}.result", draft)


def parse_document(document: dict[str, Any]) -> Parsed:
    """Drafts of a whole-file (JSON) recording."""
    reader = _Reader()
    reader.meta(document)
    for message in document.get("messages") or []:
        reader.message(message)
    return reader.parsed


def parse(records: list[tuple[int, Any]]) -> Parsed:
    """Drafts of a JSONL recording's ``(line, record)`` pairs."""
    reader = _Reader()
    for number, record in records:
        reader.line(number, record)
    return reader.parsed


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        return "".join(str(p["text"]) for p in content
                       if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _result_text(call: dict[str, Any]) -> str:
    """The tool's own output as the model got it; the edit's diff when one is shown."""
    parts: list[str] = []
    result = call.get("result")
    for part in result if isinstance(result, list) else [result]:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        body = response.get("response") if isinstance(response, dict) else None
        if isinstance(body, dict):
            for key in ("output", "error", "content"):
                if isinstance(body.get(key), str) and body[key]:
                    parts.append(body[key])
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    display = call.get("resultDisplay")
    if isinstance(display, dict) and isinstance(display.get("fileDiff"), str):
        parts.append(display["fileDiff"])
    elif isinstance(display, str) and display and not parts:
        parts.append(display)
    return "\n".join(parts)

"""OpenCode sessions: its SQLite store and ``opencode export`` JSON.

``opencode export <sessionID>`` prints ``{"info": {id, parentID?, directory, title, time},
"messages": [{"info": {id, sessionID, role, time, …}, "parts": [...]}]}``. The store
(``~/.local/share/opencode/opencode.db``) keeps the same objects in the tables
``session`` (``id``, ``parent_id``, ``directory``, ``title``, ``time_created``…),
``message`` (``id``, ``session_id``, ``data`` JSON) and ``part`` (``id``, ``message_id``,
``session_id``, ``data`` JSON); :func:`sessions_in_db` reads them back into the export
shape, one document per session, so both go through :func:`parse`.

Parts: ``text`` → message; ``tool`` (``{callID, tool, state: {status, input, output,
metadata, time}}``) → a ``tool_call`` / ``file_edit`` (edit diffs from
``state.metadata.diff``, verbatim) and, once ``completed`` or ``error``, its result
(``metadata.exit`` is the shell's exit code); ``reasoning``, ``step-start``,
``step-finish``, ``snapshot`` and ``patch`` are skipped (counted); ``subtask``,
``agent``, ``file``, ``compaction`` and ``retry`` are notes; any other part type is an
unknown note. A session with ``parentID`` (a ``task`` subagent) is its own thread whose
``attrs.parent_thread_id`` is the parent session. Positions are part ids. The session's
``version`` and ``directory``, and the model and provider its messages name, are a settings
note where first said and where they change (``common.settings_note``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from breadcrumb.importers.common import (
    Draft,
    ImportFormatError,
    Parsed,
    ToolCall,
    add_settings,
    as_dict,
    as_json_text,
    parse_ts,
    unknown_note,
)
from breadcrumb.importers.toolcalls import call_draft, result_draft

_SKIPPED_PARTS = frozenset({"reasoning", "step-start", "step-finish", "snapshot", "patch"})
_NOTE_PARTS = frozenset({"subtask", "agent", "file", "compaction", "retry"})


def looks_like_export(document: Any) -> bool:
    """An ``opencode export`` document."""
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        return False
    info = document.get("info")
    first = next(iter(document["messages"]), None)
    return isinstance(info, dict) and isinstance(info.get("id"), str) and (
        first is None or (isinstance(first, dict) and "parts" in first and "info" in first))


def parse(document: dict[str, Any]) -> Parsed:
    """Drafts of one exported (or store-read) session."""
    info = as_dict(document.get("info"))
    parsed = Parsed(drafts=[], agent="opencode", session_id=info.get("id"))
    if isinstance(info.get("parentID"), str) and info["parentID"]:
        parsed.parent_thread_id = info["parentID"]
    directory = info.get("directory")
    if isinstance(directory, str) and directory.strip("/"):
        parsed.project = directory.rstrip("/").rsplit("/", 1)[-1][:128]
    for key in ("title", "version", "slug"):
        if isinstance(info.get(key), str) and info[key]:
            parsed.meta[key] = info[key]
    add_settings(parsed, "session", parse_ts(as_dict(info.get("time")).get("created")),
                 agent_version=info.get("version"), working_directory=directory)
    calls: dict[str, ToolCall] = {}
    for entry in document.get("messages") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("info"), dict):
            parsed.skipped["message without info"] += 1
            continue
        message = entry["info"]
        role = "user" if message.get("role") == "user" else "assistant"
        ts = parse_ts((message.get("time") or {}).get("created"))
        _settings(parsed, message, ts)
        for number, part in enumerate(entry.get("parts") or []):
            if not isinstance(part, dict):
                parsed.skipped["not an object"] += 1
                continue
            position = str(part.get("id") or f"{message.get('id')}.{number}")
            parsed.drafts.extend(_part(position, part, role, ts, calls, parsed))
        error = message.get("error")
        if isinstance(error, dict):
            parsed.drafts.append(Draft(f"{message.get('id')}.error", "system", "note",
                                       as_json_text(error), ts, attrs={"error": True}))
    return parsed


def _settings(parsed: Parsed, message: dict[str, Any], ts: str | None) -> None:
    """The model and provider a message names — an assistant's ``modelID`` /
    ``providerID`` and ``path.cwd``, a user's ``model: {providerID, modelID}`` — where first
    named and where they change."""
    chosen = as_dict(message.get("model"))
    add_settings(parsed, str(message.get("id")), ts,
                 model=message.get("modelID") or chosen.get("modelID"),
                 provider=message.get("providerID") or chosen.get("providerID"),
                 working_directory=as_dict(message.get("path")).get("cwd"))


def _part(position: str, part: dict[str, Any], role: str, ts: str | None,
          calls: dict[str, ToolCall], parsed: Parsed) -> list[Draft]:
    kind = part.get("type")
    when = parse_ts((part.get("time") or {}).get("start")) if isinstance(
        part.get("time"), dict) else None
    when = when or ts
    if kind == "text":
        text = part.get("text")
        if not isinstance(text, str) or not text:
            parsed.skipped["empty text part"] += 1
            return []
        if part.get("synthetic"):
            return [Draft(position, "system", "note", text, when, attrs={"synthetic": True})]
        return [Draft(position, role, "message", text, when)]
    if kind == "tool":
        return _tool(position, part, when, calls)
    if kind in _SKIPPED_PARTS:
        parsed.skipped[f"{kind} part"] += 1
        return []
    if kind in _NOTE_PARTS:
        body = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
        return [Draft(position, "system", "note", as_json_text(body), when,
                      attrs={"part_type": kind})]
    return [unknown_note(parsed, position, f"part type {kind}", part, when)]


def _tool(position: str, part: dict[str, Any], ts: str | None,
          calls: dict[str, ToolCall]) -> list[Draft]:
    state = as_dict(part.get("state"))
    name = str(part.get("tool") or "tool")
    call_id = str(part.get("callID") or position)
    times = as_dict(state.get("time"))
    started = parse_ts(times.get("start")) or ts
    call = call_draft(f"{position}.call", name, state.get("input"), started, call_id, calls)
    meta = as_dict(state.get("metadata"))
    if call.kind == "file_edit" and isinstance(meta.get("diff"), str) and meta["diff"]:
        call.content = f"{call.content}\n{meta['diff']}"
    drafts = [call]
    status = state.get("status")
    if status in ("completed", "error"):
        text = state.get("output") if status == "completed" else state.get("error")
        text = text if isinstance(text, str) else as_json_text(text or "")
        code = meta.get("exit")
        result = result_draft(f"{position}.result", calls.get(call_id), text,
                              parse_ts(times.get("end")) or started,
                              failed=True if status == "error" else None,
                              exit_code=code if isinstance(code, int) else None,
                              call_id=call_id, name=name)
        if isinstance(meta.get("sessionId"), str):  # a task: the subagent's session
            result.attrs["child_thread_id"] = meta["sessionId"]
        drafts.append(result)
    return drafts


def sessions_in_db(path: Path) -> list[dict[str, Any]]:
    """Every session of an OpenCode store, oldest first, in the export shape."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        raise ImportFormatError(f"{path}: not an SQLite database: {exc}") from exc
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"session", "message", "part"} <= tables:
            raise ImportFormatError(f"{path}: not an OpenCode store (no session, message "
                                    "and part tables)")
        columns = [r[1] for r in db.execute("PRAGMA table_info(session)")]
        sessions = [dict(zip(columns, row, strict=True)) for row in db.execute(
            "SELECT * FROM session ORDER BY time_created, id")]
        messages: dict[str, list[dict[str, Any]]] = {}
        for mid, sid, created, data in db.execute(
                "SELECT id, session_id, time_created, data FROM message "
                "ORDER BY time_created, id"):
            info = {"id": mid, "sessionID": sid, **_json(data)}
            info.setdefault("time", {"created": created})
            messages.setdefault(sid, []).append({"info": info, "parts": []})
        by_id = {m["info"]["id"]: m for ms in messages.values() for m in ms}
        for pid, mid, sid, data in db.execute(
                "SELECT id, message_id, session_id, data FROM part ORDER BY id"):
            if mid in by_id:
                by_id[mid]["parts"].append({"id": pid, "sessionID": sid, "messageID": mid,
                                            **_json(data)})
    except sqlite3.Error as exc:
        raise ImportFormatError(f"{path}: unreadable OpenCode store: {exc}") from exc
    finally:
        db.close()
    return [{"info": _session_info(s), "messages": messages.get(s["id"], [])}
            for s in sessions]


def _session_info(row: dict[str, Any]) -> dict[str, Any]:
    info = {"id": row["id"], "parentID": row.get("parent_id"),
            "directory": row.get("directory"), "title": row.get("title"),
            "version": row.get("version"), "slug": row.get("slug"),
            "time": {"created": row.get("time_created"), "updated": row.get("time_updated")}}
    return {k: v for k, v in info.items() if v is not None}


def _json(data: Any) -> dict[str, Any]:
    if isinstance(data, bytes | str):
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}

"""Aider chat history (``<repo>/.aider.chat.history.md``), one file for many sessions.

Each session starts with ``# aider chat started at YYYY-MM-DD HH:MM:SS``. In it, lines
``#### …`` are what the user typed, lines ``> …`` are aider's own output (tool output,
``Applied edit to …``, ``Commit …``, the output of ``/run`` and ``/test``), and the rest is
the model's answer, whose ``<<<<<<< SEARCH`` / ``=======`` / ``>>>>>>> REPLACE`` blocks
are the edits (the file name is the line before the block or its fence). Aider ends its
markdown lines with two spaces; they are dropped, nothing else is changed.

``/run CMD``, ``/test CMD`` and ``!CMD`` are ``tool_call`` events whose output block is
the result (a ``test_result`` when the command runs tests; aider writes no exit code, so
one is kept only when the output states it); each edit block is a ``file_edit``;
other ``>`` blocks are notes; the note naming aider's version and model carries them as
``attrs.session_settings``. The thread of a session is ``aider-<start time>-<digest of
its opening lines>``; positions are block numbers in the session.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime

from breadcrumb.importers.common import Draft, Parsed, ToolCall, parse_ts
from breadcrumb.importers.toolcalls import call_draft, result_draft

START_RE = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$",
                      re.MULTILINE)
_EDIT_RE = re.compile(r"(?:^|\n)([^\n`]*\S)[ \t]*\n(?:```[^\n]*\n)?<<<<<<< SEARCH\n(.*?)"
                      r"\n?=======\n(.*?)\n?>>>>>>> REPLACE(?:\n```)?", re.DOTALL)
_COMMAND_RE = re.compile(r"^(?:/(?:run|test)\s+|!)(.+)", re.DOTALL)
#: what aider prints of itself when a session starts (``Aider v0.84.0``, ``Main model:
#: anthropic/claude-sonnet-4-20250514 with diff edit format`` — ``Model:`` in newer builds)
_VERSION_RE = re.compile(r"^Aider (v\d[\w.-]*)\s*$", re.MULTILINE)
_MODEL_RE = re.compile(r"^(?:Main )?[Mm]odel: (\S+)", re.MULTILINE)


def looks_like(text: str) -> bool:
    """An aider chat history (a session header opens the file)."""
    return START_RE.match(text.lstrip()[:200]) is not None


def parse_text(text: str) -> list[Parsed]:
    """One :class:`Parsed` per session of the file, in order."""
    starts = list(START_RE.finditer(text))
    sessions: list[Parsed] = []
    for number, match in enumerate(starts):
        end = starts[number + 1].start() if number + 1 < len(starts) else len(text)
        body = text[match.end(): end]
        started = datetime.fromisoformat(match.group(1)).isoformat() + "Z"
        digest = hashlib.sha256(body[:400].encode()).hexdigest()[:12]
        parsed = Parsed(drafts=[], agent="aider",
                        session_id=f"aider-{match.group(1).replace(' ', 'T')}-{digest}")
        _session(parsed, body, parse_ts(started))
        sessions.append(parsed)
    return sessions


def _blocks(body: str) -> list[tuple[str, str]]:
    """``(kind, text)`` runs: ``user`` (####), ``output`` (>) and ``assistant`` lines."""
    blocks: list[tuple[str, list[str]]] = []
    fenced = False
    for raw in body.splitlines():
        line = raw[:-2] if raw.endswith("  ") else raw
        if line.startswith("#### ") or line == "####":
            kind, text = "user", line[5:]
        elif not fenced and (line.startswith("> ") or line == ">"):
            kind, text = "output", line[2:]
        else:
            kind, text = "assistant", line
            if line.lstrip().startswith("```"):
                fenced = not fenced
        if blocks and blocks[-1][0] == kind:
            blocks[-1][1].append(text)
        else:
            blocks.append((kind, [text]))
    return [(kind, "\n".join(lines).strip("\n")) for kind, lines in blocks
            if "\n".join(lines).strip()]


def _session(parsed: Parsed, body: str, ts: str | None) -> None:
    calls: dict[str, ToolCall] = {}
    pending: str | None = None
    for number, (kind, text) in enumerate(_blocks(body)):
        position = str(number)
        if kind == "user":
            command = _COMMAND_RE.match(text.strip())
            if command is not None:
                pending = position
                parsed.drafts.append(call_draft(position, "run_command",
                                                {"command": command.group(1)}, ts, position,
                                                calls))
                parsed.drafts[-1].attrs["typed"] = text.strip()
            else:
                pending = None
                parsed.drafts.append(Draft(position, "user", "message", text, ts))
        elif kind == "output":
            if pending is not None:
                parsed.drafts.append(result_draft(position, calls.get(pending), text, ts,
                                                  call_id=pending))
                pending = None
            else:
                parsed.drafts.append(_output_note(parsed, position, text, ts))
        else:
            pending = None
            parsed.drafts.extend(_answer(position, text, ts))
    for draft in parsed.drafts[1:]:  # one time for the session: the rest follow it
        draft.ts = None


def _output_note(parsed: Parsed, position: str, text: str, ts: str | None) -> Draft:
    """Aider's own output, a note; the one that names its version and model (the
    session's start) carries them as ``attrs.session_settings``: the lines are already
    there, verbatim, to be found and quoted (``common.settings_note`` for other agents)."""
    version, model = _VERSION_RE.search(text), _MODEL_RE.search(text)
    found = {k: m.group(1) for k, m in (("agent_version", version), ("model", model)) if m}
    said = parsed.settings.setdefault("", {})
    new = {k: v for k, v in found.items() if said.get(k) != v}
    said.update(new)
    attrs = {"record_type": "session settings", "session_settings": new} if new else {}
    return Draft(position, "system", "note", text, ts, attrs=attrs)


def _answer(position: str, text: str, ts: str | None) -> list[Draft]:
    """The model's answer, and a ``file_edit`` per SEARCH/REPLACE block in it."""
    edits: list[Draft] = []
    for number, match in enumerate(_EDIT_RE.finditer(text)):
        path = match.group(1).strip().strip("`*")
        content = f"edit {path}\n<<<<<<< SEARCH\n{match.group(2)}\n=======\n" \
                  f"{match.group(3)}\n>>>>>>> REPLACE"
        edits.append(Draft(f"{position}.e{number}", "assistant", "file_edit", content, ts,
                           "search_replace", {"path": path, "paths": [path]}))
    prose = _EDIT_RE.sub(lambda m: f"\n[edit of {m.group(1).strip()}]", text).strip()
    said = [Draft(position, "assistant", "message", prose, ts)] if prose else []
    return said + edits

"""Which agent wrote a transcript, from its content (never its name).

:func:`detect_format` looks at a whole-file JSON document or the first JSONL records;
:func:`detect_text` at a markdown file's opening lines; an SQLite file is ``opencode``
when it has OpenCode's tables (:func:`breadcrumb.importers.opencode.sessions_in_db`
checks them).
"""

from __future__ import annotations

from typing import Any

from breadcrumb.importers import (
    aider,
    cline,
    codex,
    copilot,
    cursor,
    gemini,
    openai_chat,
    opencode,
    specstory,
)
from breadcrumb.importers.common import ImportFormatError

_SNIFF_RECORDS = 20
KNOWN = ("a Claude Code, Codex or OpenAI chat transcript, nor a Gemini CLI, OpenCode, "
         "Cline / Roo, Copilot, Cursor, SpecStory or Aider one")


def detect_format(document: Any, records: list[tuple[int, Any]]) -> str:
    """The format of a JSON document (``records`` empty) or of JSONL records."""
    if document is not None:
        if gemini.looks_like_document(document):
            return "gemini"
        if opencode.looks_like_export(document):
            return "opencode"
        if cline.looks_like_ui(document):
            return "cline-ui"
        if cline.looks_like_history(document):
            return "cline"
        if openai_chat.looks_like_messages(document):
            return "openai"
        raise ImportFormatError(f"a JSON document that is not {KNOWN}")
    for _, record in records[:_SNIFF_RECORDS]:
        fmt = _record_format(record)
        if fmt is not None:
            return fmt
    raise ImportFormatError(f"not {KNOWN}")


def detect_text(text: str) -> str:
    """``specstory`` or ``aider`` for a markdown transcript."""
    if specstory.looks_like(text):
        return "specstory"
    if aider.looks_like(text):
        return "aider"
    raise ImportFormatError("a markdown file that is neither a SpecStory export nor an "
                            "aider chat history")


def _record_format(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    kind = record.get("type")
    if kind in ("session_meta", "response_item", "event_msg", "turn_context") or (
            "instructions" in record and "id" in record):
        return "codex"
    if copilot.looks_like_record(record):
        return "copilot"
    if gemini.looks_like_record(record):
        return "gemini"
    if cursor.looks_like_record(record):
        return "cursor"
    if "sessionId" in record or kind in ("summary", "file-history-snapshot") or (
            kind in ("user", "assistant") and isinstance(record.get("message"), dict)):
        return "claude-code"
    if kind in codex.ITEM_TYPES:
        return "codex"
    if isinstance(record.get("role"), str) and ("content" in record or "tool_calls" in record):
        return "openai"
    return None

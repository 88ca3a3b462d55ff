"""Importers for real agent transcripts → contract events.

    from breadcrumb.importers import ImportOptions, import_file
    result = import_file(Path("session.jsonl"), "auto", ImportOptions(user_id="me"))
    result.events  # validated-shape dicts, each thread ending with a session_end

Formats: ``claude-code`` (session JSONL, subagent files too), ``codex`` (rollout JSONL,
up to the 0.144 code mode), ``openai`` (chat messages JSON or JSONL); ``auto`` (the
default) recognises them by content (:func:`detect_format`). Event ids are uuid5 over
the tenant, the session's own id and each record's position in it (its uuid when it has
one) — never the file name: a renamed copy re-imported is all duplicates, and two
sessions saved under one name are two threads. :func:`transcripts_in` walks a folder.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from breadcrumb.importers import claude_code, codex, openai_chat
from breadcrumb.importers.common import ImportFormatError, ImportOptions, Parsed, finalize

FORMATS: tuple[str, ...] = ("claude-code", "codex", "openai")
SUFFIXES = (".jsonl", ".json")
_SNIFF_RECORDS = 20

__all__ = ["FORMATS", "ImportFormatError", "ImportOptions", "ImportResult", "detect_format",
           "import_file", "import_records", "transcripts_in"]


@dataclass(slots=True)
class ImportResult:
    """The events of one transcript, what was skipped, and lines that were not JSON."""

    events: list[dict[str, Any]]
    skipped: Counter[str] = field(default_factory=Counter)
    bad_lines: list[dict[str, Any]] = field(default_factory=list)
    fmt: str = ""

    @property
    def threads(self) -> list[str]:
        """Threads written, in order of first event."""
        return list(dict.fromkeys(e["thread_id"] for e in self.events))


def import_file(path: Path, fmt: str, options: ImportOptions) -> ImportResult:
    """Read and convert one transcript file (``fmt="auto"``: recognised by content)."""
    document, records, bad = _read(path)
    if fmt == "auto":
        fmt = detect_format(document, records)
    if fmt == "openai":
        messages, session = _messages(path, document, records)
        result = import_records(messages, fmt, options, path.name,
                                session or _content_id(messages))
    else:
        result = import_records(records, fmt, options, path.name, _content_id(records))
        result.bad_lines = bad
    result.fmt = fmt
    return result


def import_records(records: list[Any], fmt: str, options: ImportOptions, source: str,
                   default_thread: str) -> ImportResult:
    """Convert already-parsed records (JSONL: ``(line_number, value)`` pairs)."""
    parsed = _parse(records, fmt)
    if not parsed.drafts:
        raise ImportFormatError(f"{source}: no {fmt} transcript records found "
                                f"(skipped: {dict(parsed.skipped) or 'nothing'})")
    events = finalize(parsed, options, source, fmt, default_thread)
    return ImportResult(events, parsed.skipped, fmt=fmt)


def detect_format(document: Any, records: list[tuple[int, Any]]) -> str:
    """``claude-code``, ``codex`` or ``openai`` from what the records look like."""
    if document is not None:
        if openai_chat.looks_like_messages(document):
            return "openai"
        raise ImportFormatError("a JSON document that is not a chat export")
    for _, record in records[:_SNIFF_RECORDS]:
        fmt = _record_format(record)
        if fmt is not None:
            return fmt
    raise ImportFormatError("not a Claude Code, Codex or OpenAI chat transcript")


def _record_format(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    kind = record.get("type")
    if kind in ("session_meta", "response_item", "event_msg", "turn_context") or (
            "instructions" in record and "id" in record):
        return "codex"
    if "sessionId" in record or kind in ("summary", "file-history-snapshot") or (
            kind in ("user", "assistant") and isinstance(record.get("message"), dict)):
        return "claude-code"
    if kind in codex.ITEM_TYPES:
        return "codex"
    if isinstance(record.get("role"), str) and ("content" in record or "tool_calls" in record):
        return "openai"
    return None


def transcripts_in(folder: Path) -> Iterator[Path]:
    """Every ``*.jsonl`` / ``*.json`` file under ``folder``, in path order."""
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in SUFFIXES and not path.name.startswith("."):
            yield path


def _read(path: Path) -> tuple[Any, list[tuple[int, Any]], list[dict[str, Any]]]:
    """A whole-file JSON document, or JSONL records (and the lines that were not JSON)."""
    if path.suffix == ".json":
        try:
            return orjson.loads(path.read_bytes()), [], []
        except orjson.JSONDecodeError as exc:
            raise ImportFormatError(f"{path}: not JSON: {exc}") from exc
    from breadcrumb.jsonl import read_records

    records, bad = read_records(path)
    if not records and bad:
        raise ImportFormatError(f"{path}: {bad[0]['error']}")  # the error says "not JSON"
    return None, records, bad


def _messages(path: Path, document: Any,
              records: list[tuple[int, Any]]) -> tuple[list[Any], str | None]:
    if document is None:  # chat messages one a line
        return [value for _, value in records], None
    try:
        return openai_chat.messages_of(document), openai_chat.conversation_id(document)
    except ImportFormatError as exc:
        raise ImportFormatError(f"{path}: {exc}") from exc


def _content_id(records: list[Any]) -> str:
    """A thread id for a transcript that names none: a digest of its first records
    (stable while the file grows, different for different conversations)."""
    head = orjson.dumps(records[:3], option=orjson.OPT_SORT_KEYS, default=str)
    return "import-" + hashlib.sha256(head).hexdigest()[:24]


def _parse(records: list[Any], fmt: str) -> Parsed:
    if fmt == "claude-code":
        return claude_code.parse(records)
    if fmt == "codex":
        return codex.parse(records)
    if fmt == "openai":
        return openai_chat.parse(records)
    raise ImportFormatError(f"unknown format {fmt!r}; one of auto, {', '.join(FORMATS)}")

"""Importers for real agent transcripts → contract events.

    from breadcrumb.importers import ImportOptions, import_file
    result = import_file(Path("session.jsonl"), "claude-code", ImportOptions(user_id="me"))
    result.events  # validated-shape dicts, ending with a session_end

Formats: ``claude-code`` (session JSONL), ``codex`` (rollout JSONL), ``openai`` (chat
messages JSON). Event ids are uuid5 over the source file name and the record position,
so importing the same file twice changes nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from breadcrumb.importers import claude_code, codex, openai_chat
from breadcrumb.importers.common import ImportFormatError, ImportOptions, Parsed, finalize

FORMATS: tuple[str, ...] = ("claude-code", "codex", "openai")

__all__ = ["FORMATS", "ImportFormatError", "ImportOptions", "ImportResult", "import_file",
           "import_records"]


@dataclass(slots=True)
class ImportResult:
    """The events of one transcript, what was skipped, and lines that were not JSON."""

    events: list[dict[str, Any]]
    skipped: Counter[str] = field(default_factory=Counter)
    bad_lines: list[dict[str, Any]] = field(default_factory=list)


def import_file(path: Path, fmt: str, options: ImportOptions) -> ImportResult:
    """Read and convert one transcript file."""
    if fmt == "openai":
        try:
            document = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise ImportFormatError(f"{path}: not JSON: {exc}") from exc
        return import_records(openai_chat.messages_of(document), fmt, options, path.name,
                              path.stem)
    records, bad = _jsonl(path)
    result = import_records(records, fmt, options, path.name, path.stem)
    result.bad_lines = bad
    return result


def import_records(records: list[Any], fmt: str, options: ImportOptions, source: str,
                   default_thread: str) -> ImportResult:
    """Convert already-parsed records (JSONL: ``(line_number, value)`` pairs)."""
    parsed = _parse(records, fmt)
    if not parsed.drafts:
        raise ImportFormatError(f"{source}: no {fmt} transcript records found "
                                f"(skipped: {dict(parsed.skipped) or 'nothing'})")
    events = finalize(parsed, options, source, fmt, default_thread)
    return ImportResult(events, parsed.skipped)


def _parse(records: list[Any], fmt: str) -> Parsed:
    if fmt == "claude-code":
        return claude_code.parse(records)
    if fmt == "codex":
        return codex.parse(records)
    if fmt == "openai":
        return openai_chat.parse(records)
    raise ImportFormatError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")


def _jsonl(path: Path) -> tuple[list[tuple[int, Any]], list[dict[str, Any]]]:
    from breadcrumb.jsonl import read_records

    return read_records(path)

"""Importers for real agent transcripts → contract events.

    from breadcrumb.importers import ImportOptions, import_file
    result = import_file(Path("session.jsonl"), "auto", ImportOptions(user_id="me"))
    result.events  # validated-shape dicts, each thread ending with a session_end

Formats: ``claude-code`` (session JSONL, subagent files too), ``codex`` (rollout JSONL,
up to the 0.144 code mode), ``openai`` (chat messages JSON or JSONL), ``gemini`` (Gemini
CLI chat JSON and JSONL), ``opencode`` (its SQLite store and ``opencode export`` JSON),
``cline`` / ``cline-ui`` (Cline and Roo ``api_conversation_history.json`` /
``ui_messages.json``), ``copilot`` (Copilot CLI ``events.jsonl``), ``cursor`` (Cursor
``agent-transcripts``), ``specstory`` (SpecStory markdown), ``aider``
(``.aider.chat.history.md``); ``auto`` (the default) recognises them by content
(:mod:`breadcrumb.importers.detect`). Records of a type an importer does not know are
kept as notes and counted (``ImportResult.unknown``). Event ids are uuid5 over
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

from breadcrumb.importers import (
    aider,
    claude_code,
    cline,
    codex,
    copilot,
    cursor,
    gemini,
    openai_chat,
    opencode,
    specstory,
)
from breadcrumb.importers.common import (
    ImportFormatError,
    ImportOptions,
    LineRecords,
    Parsed,
    finalize,
    settings_note,
)
from breadcrumb.importers.detect import detect_format, detect_text

FORMATS: tuple[str, ...] = ("claude-code", "codex", "openai", "gemini", "opencode", "cline",
                            "cline-ui", "copilot", "cursor", "specstory", "aider")
SUFFIXES = (".jsonl", ".json", ".md", ".db")
#: formats whose files hold whole documents (JSON) or text, not JSONL records
_DOCUMENT_FORMATS = frozenset({"openai", "opencode", "cline", "cline-ui"})
_TEXT_FORMATS = frozenset({"specstory", "aider"})
#: files agents keep beside their transcripts that are no transcript themselves
_SIDE_FILES = frozenset({"history_item.json", "task_metadata.json", "_index.json",
                         "projects.json", "logs.json"})

__all__ = ["FORMATS", "ImportFormatError", "ImportOptions", "ImportResult", "detect_format",
           "import_file", "import_path", "import_records", "transcripts_in"]


@dataclass(slots=True)
class ImportResult:
    """The events of one transcript, what was skipped, and lines that were not JSON."""

    events: list[dict[str, Any]]
    skipped: Counter[str] = field(default_factory=Counter)
    bad_lines: list[dict[str, Any]] = field(default_factory=list)
    fmt: str = ""
    #: record types the importer did not know, each kept as a note: how many of each
    unknown: Counter[str] = field(default_factory=Counter)
    #: per event, the 1-based line of the file it was read from (None: a ``session_end``
    #: the importer adds, or a record of a whole-file document)
    lines: list[int | None] = field(default_factory=list)

    def line_of(self, index: int) -> int | None:
        """The file line of ``events[index]``."""
        return self.lines[index] if 0 <= index < len(self.lines) else None

    @property
    def threads(self) -> list[str]:
        """Threads written, in order of first event."""
        return list(dict.fromkeys(e["thread_id"] for e in self.events))


def import_file(path: Path, fmt: str, options: ImportOptions) -> ImportResult:
    """Read and convert one transcript file (``fmt="auto"``: recognised by content).

    A file that holds several sessions (an OpenCode store, an aider history) gives the
    first; :func:`import_path` gives them all."""
    return import_path(path, fmt, options)[0]


def import_path(path: Path, fmt: str, options: ImportOptions) -> list[ImportResult]:
    """Every session in one file, converted: one result per session."""
    if path.suffix == ".db" or fmt == "opencode" and _is_sqlite(path):
        sessions = opencode.sessions_in_db(path)
        if not sessions:
            raise ImportFormatError(f"{path}: an OpenCode store without sessions")
        return [_result(opencode.parse(s), "opencode", options, path.name, s["info"]["id"])
                for s in sessions]
    if path.suffix == ".md":
        text = path.read_text("utf-8", errors="replace")
        fmt = detect_text(text) if fmt == "auto" else fmt
        if fmt == "aider":
            found = aider.parse_text(text)
            if not found:
                raise ImportFormatError(f"{path}: no aider session in it")
            for parsed in found:  # aider keeps its history in the repository it worked on
                parsed.project = parsed.project or path.resolve().parent.name[:128] or None
            return [_result(p, fmt, options, path.name, str(p.session_id)) for p in found]
        if fmt != "specstory":
            raise ImportFormatError(f"{path}: a markdown file is specstory or aider, not {fmt}")
        return [_result(specstory.parse_text(text), fmt, options, path.name,
                        _content_id([text[:2000]]))]
    document, records, bad = _read(path)
    if fmt == "auto":
        fmt = detect_format(document, records)
    if fmt == "openai":
        messages, session = _messages(path, document, records)
        return [import_records(messages, fmt, options, path.name,
                               session or _content_id(messages))]
    if document is not None:
        parsed = _parse_document(path, document, fmt)
        head = document[:1] if isinstance(document, list) else [document]
        return [_result(parsed, fmt, options, path.name, _content_id(head))]
    result = import_records(records, fmt, options, path.name, _content_id(records), path)
    result.bad_lines = bad
    return [result]


def import_records(records: list[Any], fmt: str, options: ImportOptions, source: str,
                   default_thread: str, path: Path | None = None) -> ImportResult:
    """Convert already-parsed records (JSONL: ``(line_number, value)`` pairs)."""
    if not isinstance(records, LineRecords) and all(
            isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], int) for r in records):
        records = LineRecords(records, [r[0] for r in records])  # (line, value) pairs
    parsed = _parse(records, fmt)
    if path is not None:
        _parent_from_layout(parsed, path, fmt)
    return _result(parsed, fmt, options, source, default_thread)


def _result(parsed: Parsed, fmt: str, options: ImportOptions, source: str,
            default_thread: str) -> ImportResult:
    if not parsed.drafts:
        raise ImportFormatError(f"{source}: no {fmt} transcript records found "
                                f"(skipped: {dict(parsed.skipped) or 'nothing'})")
    events = finalize(parsed, options, source, fmt, default_thread)
    # finalize makes one event per draft, in order, then each thread's session_end
    lines = [d.line for d in parsed.drafts] + [None] * (len(events) - len(parsed.drafts))
    return ImportResult(events, parsed.skipped, fmt=fmt, unknown=parsed.unknown, lines=lines)


def _parse_document(path: Path, document: Any, fmt: str) -> Parsed:
    if fmt == "gemini" and isinstance(document, dict):
        parsed = gemini.parse_document(document)
    elif fmt == "opencode" and isinstance(document, dict):
        parsed = opencode.parse(document)
    elif fmt == "cline" and isinstance(document, list):
        parsed = cline.parse_history(document)
        parsed.session_id = parsed.session_id or _sibling_task_id(path)
        _history_item(parsed, path)
    elif fmt == "cline-ui" and isinstance(document, list):
        parsed = cline.parse_ui(document)
        _history_item(parsed, path)
    else:
        raise ImportFormatError(f"{path}: not a {fmt} document")
    _parent_from_layout(parsed, path, fmt)
    return parsed


def _sibling_task_id(path: Path) -> str | None:
    """The task id of a Cline history: the first ``ts`` of the ``ui_messages.json`` beside."""
    ui = path.with_name("ui_messages.json")
    try:
        return cline.task_id(orjson.loads(ui.read_bytes())) if ui.is_file() else None
    except (OSError, orjson.JSONDecodeError):
        return None


def _history_item(parsed: Parsed, path: Path) -> None:
    """Roo's ``history_item.json`` beside a task: the task's own id and its parent task."""
    item_path = path.with_name("history_item.json")
    try:
        item = orjson.loads(item_path.read_bytes()) if item_path.is_file() else None
    except (OSError, orjson.JSONDecodeError):
        return
    if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"]:
        parsed.session_id = item["id"]
        parent = item.get("parentTaskId")
        if isinstance(parent, str) and parent:
            parsed.parent_thread_id = parent
        if isinstance(item.get("workspace"), str) and item["workspace"].strip("/"):
            parsed.project = item["workspace"].rstrip("/").rsplit("/", 1)[-1][:128]
            _side_file_directory(parsed, "history_item.json", item["workspace"])


def _parent_from_layout(parsed: Parsed, path: Path, fmt: str) -> None:
    """Subagents the agent files under their parent: Gemini ``chats/<parent>/<id>.jsonl``,
    Cursor ``<parent>/subagents/<id>.jsonl`` (the parent's thread is its content id)."""
    if fmt == "gemini":  # ~/.gemini/tmp/<slug>/.project_root
        _gemini_project_root(parsed, path)
    if parsed.parent_thread_id is not None:
        return
    if fmt == "gemini" and parsed.meta.get("kind") == "subagent" and (
            path.parent.name != "chats"):
        parsed.parent_thread_id = path.parent.name
    elif fmt == "cursor" and path.parent.name == "subagents":
        session_dir = path.parent.parent
        parent = session_dir / f"{session_dir.name}.jsonl"
        if parent.is_file():
            _, records, _ = _read(parent)
            parsed.parent_thread_id = _content_id(records)
        for draft in parsed.drafts:
            draft.attrs.setdefault("subagent", True)


def _gemini_project_root(parsed: Parsed, path: Path) -> None:
    """The project root Gemini CLI keeps beside its chats (``~/.gemini/tmp/<slug>/
    .project_root``): the project's name, and the working directory of a session whose
    recording names none (a settings note first in the session)."""
    for folder in path.parents[:3]:
        root = folder / ".project_root"
        if root.is_file():
            name = root.read_text("utf-8", errors="replace").strip()
            parsed.project = parsed.project or name.rstrip("/").rsplit("/", 1)[-1][:128] or None
            _side_file_directory(parsed, ".project_root", name)
            return


def _side_file_directory(parsed: Parsed, side_file: str, directory: str) -> None:
    """The working directory a side file names (Gemini's ``.project_root``, Roo's
    ``history_item.json`` ``workspace``), as the session's first settings note, where the
    transcript itself names none; timed as the session's first event, read from no line
    of the transcript (``attrs.side_file`` names the file)."""
    if "working_directory" in parsed.settings.get("", {}):
        return
    first = next((d.ts for d in parsed.drafts if d.ts), None)
    note = settings_note(parsed, side_file, first, working_directory=directory)
    if note is not None:
        note.attrs["side_file"] = side_file
        note.line = None
        parsed.drafts.insert(0, note)


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(16) == b"SQLite format 3\x00"


def transcripts_in(folder: Path) -> Iterator[Path]:
    """Transcript files under ``folder``, in path order: ``*.jsonl`` / ``*.json``, aider
    histories and SpecStory exports (``*.md``), OpenCode stores (``opencode.db``). A Cline
    ``ui_messages.json`` is left out when its task's ``api_conversation_history.json`` is
    beside it (the same task, the model's view); side files (Claude Code's
    ``subagents/agent-<id>.meta.json``, Roo's ``history_item.json`` …) are no transcripts."""
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix not in SUFFIXES:
            continue
        if path.name.startswith(".") and path.name != ".aider.chat.history.md":
            continue
        if path.suffix == ".db" and not path.name.startswith("opencode"):
            continue
        if path.suffix == ".md" and not _markdown_transcript(path):
            continue
        if path.name == "ui_messages.json" and path.with_name(
                "api_conversation_history.json").is_file():
            continue
        if path.name in _SIDE_FILES or path.name.endswith(".meta.json"):
            continue  # .meta.json: Claude Code's subagents/agent-<id>.meta.json (type, task)
        yield path


def _markdown_transcript(path: Path) -> bool:
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        head = handle.read(4000)
    return specstory.looks_like(head) or aider.looks_like(head)


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
        return LineRecords([value for _, value in records], [n for n, _ in records]), None
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
    parsers = {"claude-code": claude_code.parse, "codex": codex.parse,
               "openai": openai_chat.parse, "gemini": gemini.parse,
               "copilot": copilot.parse, "cursor": cursor.parse}
    if fmt in parsers:
        return parsers[fmt](records)
    if fmt in _DOCUMENT_FORMATS or fmt in _TEXT_FORMATS:
        raise ImportFormatError(f"{fmt} is read from a whole file, not from JSONL records")
    raise ImportFormatError(f"unknown format {fmt!r}; one of auto, {', '.join(FORMATS)}")

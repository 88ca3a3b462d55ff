"""What every importer shares: drafts, kinds for tool calls, ids, timestamps, session_end.

A format parser turns transcript records into :class:`Draft` events (role, kind,
verbatim content, the record's own timestamp if it has one, and a position such as
``"12"`` or ``"12.3"`` naming the record and block). :func:`finalize` turns drafts into
contract events: deterministic ``event_id`` (uuid5 over source file + position, so a
re-import is a no-op), kept or synthesized timestamps, and a closing ``session_end``.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

#: uuid5 namespace of imported events.
IMPORT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://breadcrumb/importers/v1")

_TEST_RE = re.compile(
    r"(?:^|[\s;&|(/])(?:pytest|py\.test|python3? -m (?:pytest|unittest)|tox|nox|"
    r"(?:(?:npm|pnpm|yarn|bun)(?: run)?|mise(?: run| r)?|just|task) test(?:[:-][\w:.-]+)?|"
    r"npx (?:vitest|jest)|vitest|jest|"
    r"go test|cargo (?:test|nextest)|mvn(?:w)? test|gradle(?:w)? test|\./gradlew test|"
    r"rspec|phpunit|dotnet test|make (?:test|check)(?:[:-][\w:.-]+)?|ctest|mix test|"
    r"deno test)(?:$|[\s;&|)])"
)
_BACKGROUND_RE = re.compile(r"^Command running in background(?: with ID: ?(\S+?))?[.\s]",
                            re.IGNORECASE)
_EXIT_RES = (
    re.compile(r"^(?:Error: )?Exit code:? (\d+)", re.MULTILINE),
    re.compile(r"Process exited with code (\d+)"),
    re.compile(r"exit(?:ed with)? (?:code|status)[:=]? ?(\d+)", re.IGNORECASE),
)
_PATCH_PATH_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
_PATCH_MOVE_RE = re.compile(r"^\*\*\* Move to: (.+)$", re.MULTILINE)


class ImportFormatError(ValueError):
    """The file is not a transcript of the requested format (names file and record)."""


#: the 1-based line of the transcript file whose record a parser is reading (None: none)
_LINE: ContextVar[int | None] = ContextVar("breadcrumb_import_line", default=None)


def current_line() -> int | None:
    """The file line of the record being parsed: every :class:`Draft` made meanwhile
    takes it, so a refused event can be named by the line it came from."""
    return _LINE.get()


class LineRecords(list[Any]):
    """Records read from numbered file lines: iterating them (as every JSONL parser does,
    once, in order) sets :func:`current_line` to each record's line while it is handled.
    ``lines[i]`` is the line of ``self[i]``; indexing and ``len`` are a list's."""

    def __init__(self, values: Sequence[Any], lines: Sequence[int]) -> None:
        super().__init__(values)
        self.lines = list(lines)

    def __iter__(self) -> Iterator[Any]:
        try:
            for index, value in enumerate(list.__iter__(self)):
                _LINE.set(self.lines[index])
                yield value
        finally:
            _LINE.set(None)


@dataclass(slots=True)
class Draft:
    """An event before ids, tenant and missing timestamps are filled in."""

    position: str
    role: str
    kind: str
    content: str
    ts: str | None = None
    tool: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    #: a sidechain / subagent of the session: its own thread ``{session}/{subthread}``
    subthread: str | None = None
    #: the 1-based line of the transcript file it was read from (None: not from a line)
    line: int | None = field(default_factory=current_line)


@dataclass(slots=True)
class Parsed:
    """A parser's output: drafts, what the transcript says about itself, what was skipped."""

    drafts: list[Draft]
    session_id: str | None = None
    project: str | None = None
    agent: str | None = None
    skipped: Counter[str] = field(default_factory=Counter)
    #: the thread that spawned this session (a subagent rollout names its parent)
    parent_thread_id: str | None = None
    #: record types the parser does not know: each kept as a ``note`` and counted here
    unknown: Counter[str] = field(default_factory=Counter)
    #: what the session says about itself (agent version, provider, title): on its end
    meta: dict[str, Any] = field(default_factory=dict)
    #: the settings each thread's notes named last (:func:`settings_note`), by subthread
    settings: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """Tenant and naming of the imported thread; ``base_time`` for records without a time."""

    user_id: str = "local"
    project_id: str | None = None
    thread_id: str | None = None
    agent_id: str | None = None
    base_time: datetime = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class ToolCall:
    """A tool call remembered until its result arrives (results name their call id)."""

    name: str
    command: str | None = None
    is_test: bool = False


def is_test_command(command: str | None) -> bool:
    """True for a shell command that runs a test suite (pytest, npm test, go test, …)."""
    return bool(command) and _TEST_RE.search(str(command)) is not None


def background_id(text: str) -> str | None:
    """The shell id of a backgrounded command ("Command running in background with ID: x"),
    ``""`` when backgrounded without an id, ``None`` when the text is not that notice."""
    match = _BACKGROUND_RE.match(text.strip() + " ")
    if match is None:
        return None
    return match.group(1) or ""


def exit_code_in(text: str) -> int | None:
    """The exit code a tool output reports (``Exit code 1``, ``exit status 2``), if any."""
    for pattern in _EXIT_RES:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def patch_paths(patch: str) -> list[str]:
    """Files an ``apply_patch`` envelope touches, in order, without repeats."""
    found = _PATCH_PATH_RE.findall(patch) + _PATCH_MOVE_RE.findall(patch)
    return list(dict.fromkeys(p.strip() for p in found))


def render_edit(tool: str, path: str, old: str | None = None, new: str | None = None,
                written: str | None = None) -> str:
    """Readable, verbatim text of an edit: the strings appear unchanged inside it."""
    if written is not None:
        return f"{tool} {path}\n{written}"
    return f"{tool} {path}\n--- old\n{old or ''}\n+++ new\n{new or ''}"


def unknown_note(parsed: Parsed, position: str, record_type: str, record: Any,
                 ts: str | None = None) -> Draft:
    """A record of a type the parser does not know, kept verbatim as a ``note`` (its JSON,
    cut at 4000 characters) and counted in ``parsed.unknown``: never dropped silently."""
    parsed.unknown[record_type] += 1
    text = as_json_text(record)
    return Draft(position, "system", "note", f"{record_type}: {text[:4000]}", ts,
                 attrs={"record_type": record_type, "unknown_record": True})


#: What a session ran with, in the order its settings note names them, and each one's label
#: (``{agent}``: the importer's agent name, ``claude-code version: 2.0.49``).
SETTINGS = (("model", "model"), ("provider", "provider"), ("agent_version", "{agent} version"),
            ("working_directory", "working directory"), ("git_branch", "git branch"))
_SETTING_CHARS = 300


def settings_note(parsed: Parsed, position: str, ts: str | None, subthread: str | None = None,
                  **found: Any) -> Draft | None:
    """A ``note`` naming the settings a session runs with — model, provider, agent version,
    working directory, git branch (``found``, by the names of :data:`SETTINGS`) — where the
    transcript records them first, and again where one changes; ``None`` when nothing is
    new. One line per setting, ``label: value``, the value as the transcript wrote it;
    ``attrs.session_settings`` holds them by name, so they become facts of the thread
    (``processors.facts``) that recall finds and quotes. Its position is the record's own,
    so a re-import or a watcher makes the same note once."""
    said = parsed.settings.setdefault(subthread or "", {})
    new = {name: text for name, _label in SETTINGS
           if (text := _setting_text(found.get(name))) is not None and said.get(name) != text}
    if not new:
        return None
    said.update(new)
    agent = parsed.agent or "agent"
    lines = [f"{label.format(agent=agent)}: {new[name]}" for name, label in SETTINGS
             if name in new]
    return Draft(f"{position}.settings", "system", "note", "\n".join(lines), ts,
                 attrs={"record_type": "session settings", "session_settings": new},
                 subthread=subthread)


def _setting_text(value: Any) -> str | None:
    """A setting's value as written: a one-line string or number, not a placeholder such
    as Claude Code's ``<synthetic>`` model of an error reply."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = str(value).strip()
    if not text or "\n" in text or len(text) > _SETTING_CHARS or text.startswith("<"):
        return None
    return text


def add_settings(parsed: Parsed, position: str, ts: str | None, subthread: str | None = None,
                 **found: Any) -> None:
    """:func:`settings_note` appended to the drafts, when there is one."""
    note = settings_note(parsed, position, ts, subthread, **found)
    if note is not None:
        parsed.drafts.append(note)


def result_kind(call: ToolCall | None) -> str:
    return "test_result" if call is not None and call.is_test else "tool_result"


def result_attrs(call: ToolCall | None, text: str, failed: bool | None,
                 exit_code: int | None = None) -> dict[str, Any]:
    """``exit_code`` when known (stated, or 0 for a shell call that did not fail)."""
    attrs: dict[str, Any] = {}
    code = exit_code if exit_code is not None else exit_code_in(text[:2000]) if failed else None
    if code is None and failed is False and call is not None and call.command is not None:
        code = 0
    if code is not None:
        attrs["exit_code"] = code
    if failed:
        attrs["is_error"] = True
    if call is not None and call.command is not None:
        attrs["command"] = call.command
    return attrs


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (for optional nested fields)."""
    return value if isinstance(value, dict) else {}


def as_json_text(value: Any) -> str:
    """A tool input as JSON text (keys kept in the order the agent wrote them)."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def parse_ts(value: Any) -> str | None:
    """The record's time as RFC 3339 with an offset; verbatim when it already is one."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if value > 10**11 else value
        return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC).isoformat().replace("+00:00", "Z")
    return value


def finalize(parsed: Parsed, options: ImportOptions, source: str, fmt: str,
             default_thread: str) -> list[dict[str, Any]]:
    """Contract events for the drafts, in order; each thread closed by a ``session_end``.

    Event ids are uuid5 over format, tenant, thread and the record's own position (its
    uuid, or its line in the session): never the file name, so a renamed copy is a
    duplicate and two sessions saved under one name are two threads.
    """
    main = (options.thread_id or parsed.session_id or default_thread)[:256]
    base = {"user_id": options.user_id,
            "project_id": options.project_id or parsed.project,
            "agent_id": options.agent_id or parsed.agent}
    base = {k: v for k, v in base.items() if v is not None}
    times = _timestamps(parsed.drafts, options.base_time)
    events: list[dict[str, Any]] = []
    last_ts: dict[str, str] = {}
    for draft, ts in zip(parsed.drafts, times, strict=True):
        thread = _thread_of(main, draft.subthread)
        links = _links(main, draft.subthread, parsed.parent_thread_id)
        draft.attrs = {**draft.attrs, **links}
        events.append(_event(draft, ts, {**base, "thread_id": thread},
                             _ident(fmt, options, thread, draft.position)))
        last_ts[thread] = ts
    if not last_ts:
        last_ts[main] = _iso(options.base_time)
    for thread, end_ts in last_ts.items():
        closing = Draft("end", "system", "session_end",
                        f"end of imported {fmt} session {thread} ({source})")
        subthread = thread[len(main) + 1:] if thread != main else None
        closing.attrs = _links(main, subthread, parsed.parent_thread_id)
        if thread == main and parsed.meta:
            closing.attrs = {**closing.attrs, "session": parsed.meta}
        events.append(_event(closing, end_ts, {**base, "thread_id": thread},
                             _ident(fmt, options, thread, "end")))
    return events


def _thread_of(main: str, subthread: str | None) -> str:
    return main if subthread is None else f"{main}/{subthread}"[:256]


def _links(main: str, subthread: str | None, parent: str | None) -> dict[str, Any]:
    if subthread is not None:
        return {"parent_thread_id": main}
    return {"parent_thread_id": parent} if parent else {}


def _ident(fmt: str, options: ImportOptions, thread: str, position: str) -> str:
    name = f"{fmt}:{options.user_id}/{thread}:{position}"
    return str(uuid.uuid5(IMPORT_NAMESPACE, name))


#: terminal colour / cursor escapes (CSI, OSC, charset) a shell's output carries
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z])")
_OUTPUT_KINDS = frozenset({"tool_result", "test_result"})


def plain_output(text: str) -> str:
    """A tool's output as the terminal showed it: colour and cursor escapes removed (a
    coloured ``Error: No configuration files`` is that text, findable verbatim)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def _event(draft: Draft, ts: str, base: dict[str, Any], event_id: str) -> dict[str, Any]:
    content = plain_output(draft.content) if draft.kind in _OUTPUT_KINDS else draft.content
    event: dict[str, Any] = {"event_id": event_id, **base, "ts": ts, "role": draft.role,
                             "kind": draft.kind, "content": content}
    if draft.tool:
        event["tool"] = draft.tool[:128]
    if draft.attrs:
        event["attrs"] = draft.attrs
    return event


def _timestamps(drafts: list[Draft], base_time: datetime) -> list[str]:
    """Kept where given; otherwise one second after the last known time (or base_time)."""
    out: list[str] = []
    anchor, since = base_time, 0
    for draft in drafts:
        if draft.ts is not None:
            out.append(draft.ts)
            anchor, since = datetime.fromisoformat(draft.ts), 0
            continue
        since += 1
        out.append(_iso(anchor + timedelta(seconds=since)))
    return out


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")

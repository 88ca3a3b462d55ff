"""Live capture: tail agent session folders and publish each new record once.

:class:`Watcher` scans folders for transcripts — ``*.jsonl`` (Claude Code, Codex, Gemini
CLI, Copilot CLI, Cursor), whole-file JSON the agents rewrite (Gemini CLI
``session-*.json``, Cline / Roo ``api_conversation_history.json``), markdown (SpecStory
exports, ``.aider.chat.history.md``) and OpenCode's SQLite store (``opencode.db``) —
converts each with the importers (format recognised by content), so the ids are the ones
``breadcrumb import`` gives, and sends the events it has not sent before to a
:class:`Sink`. Only complete JSONL lines count: a torn last line waits for its newline; in
markdown the last block waits until the file goes quiet (it may still be written).

Exactly once: the ids sent from each file are saved in a JSON state file after every
send (per file: device and inode, bytes consumed, a short form of each id sent), so a
restarted watcher sends only what is new — also for files rewritten in place (JSON
documents, the SQLite store, a message re-appended with its tool result). A file whose
inode changed under its name (rotated) is a new file, and the old one is finished under
its new name when it is still in the folder. A file that stops changing for
``idle_end_seconds`` has its sessions ended: the ``session_end`` events are sent and each
thread is flushed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from breadcrumb.importers import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    detect_format,
    import_path,
    import_records,
)

#: where each agent saves by default (Aider and SpecStory write inside the project: pass it)
DEFAULT_FOLDERS = (
    "~/.claude/projects", "~/.codex/sessions", "~/.gemini/tmp", "~/.copilot/session-state",
    "~/.cursor/projects", "~/.local/share/opencode",
    "~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks",
    "~/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks",
    "~/Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/tasks",
    "~/Library/Application Support/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks",
)
_JSON_NAMES = ("api_conversation_history.json", "ui_messages.json")
_ID_CHARS = 16  # of an event id kept in the state: enough to tell a file's events apart


class Sink(Protocol):
    """Where events go: the query service or Kafka (see :class:`SdkSink`)."""

    def send(self, events: list[dict[str, Any]]) -> None: ...

    def flush(self, user_id: str, thread_id: str) -> None: ...


@dataclass(slots=True)
class FileState:
    """What was read and sent of one file (keyed by device:inode)."""

    path: str
    consumed: int = 0  # bytes up to the last complete line read (JSONL)
    sent: int = 0  # events sent (session_end excluded)
    base_time: str = ""  # for records without a time: fixed when first seen
    ended: bool = False
    last_growth: float = 0.0
    sent_ids: list[str] = field(default_factory=list)  # the first characters of each id
    signature: str = ""  # size and mtime of a whole-file transcript when last read


@dataclass(slots=True)
class WatchStats:
    """Counters of one watcher (what a status line or a test reads)."""

    events_sent: int = 0
    sessions_ended: int = 0
    skipped_files: dict[str, str] = field(default_factory=dict)


class Watcher:
    """Poll folders; ``poll_once()`` does one pass, ``run()`` loops until stopped."""

    def __init__(self, folders: Iterable[Path], sink: Sink, state_path: Path, *,
                 user_id: str = "local", idle_end_seconds: float = 600.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.folders = [Path(f).expanduser() for f in folders]
        self.sink = sink
        self.state_path = state_path
        self.user_id = user_id
        self.idle_end_seconds = idle_end_seconds
        self.clock = clock
        self.files, self.ended_ids = _load(state_path)
        self.stats = WatchStats()

    def run(self, interval: float = 1.0, stop: Callable[[], bool] = lambda: False) -> None:
        """Poll every ``interval`` seconds until ``stop()`` says so."""
        while not stop():
            self.poll_once()
            time.sleep(interval)

    def poll_once(self) -> int:
        """Read every transcript once; the number of events sent."""
        before = self.stats.events_sent
        for key, path in self._transcripts():
            self._read(key, path)
        self._end_idle_sessions()
        return self.stats.events_sent - before

    # ------------------------------------------------------------------ reading
    def _transcripts(self) -> list[tuple[str, Path]]:
        found: list[tuple[str, Path]] = []
        for folder in self.folders:
            if folder.is_dir():
                found += [(_key(p), p) for p in sorted(folder.rglob("*"))
                          if p.is_file() and (_watched(p) or _key(p) in self.files)]
        return found

    def _read(self, key: str, path: Path, final: bool = False) -> None:
        state = self.files.get(key)
        if state is None:
            state = self.files[key] = FileState(str(path), base_time=_mtime(path),
                                                last_growth=self.clock())
        state.path = str(path)
        whole = path.suffix != ".jsonl"
        signature, complete = "", b""
        if whole:
            signature = _signature(path)
            if signature == state.signature and not final:
                return
            results = self._convert_whole(path, state)
        else:
            data = path.read_bytes()
            if len(data) < state.consumed:  # truncated in place (copytruncate): re-read
                state.consumed = 0
            complete = data[: data.rfind(b"\n") + 1]
            if len(complete) <= state.consumed and not final:
                return
            result = self._convert(path, complete, state)
            results = None if result is None else [result]
        if results is None:
            return
        grew = signature != state.signature if whole else len(complete) > state.consumed
        events = [e for r in results for e in r.events if e["kind"] != "session_end"]
        if path.suffix == ".md" and not final:
            events = events[:-1]  # the last block may still be being written
        fresh = self._fresh(state, events)
        if fresh:
            self.sink.send(fresh)
            self.stats.events_sent += len(fresh)
            state.sent_ids += [e["event_id"][:_ID_CHARS] for e in fresh]
            state.sent = len(state.sent_ids)
        if grew:
            state.ended, state.last_growth = False, self.clock()
        if whole:
            state.signature = signature
        else:
            state.consumed = len(complete)
        self._save()

    @staticmethod
    def _fresh(state: FileState, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Events of the file not sent yet (a state of an older watcher counted them)."""
        if state.sent and not state.sent_ids:
            state.sent_ids = [e["event_id"][:_ID_CHARS] for e in events[: state.sent]]
        sent = set(state.sent_ids)
        return [e for e in events if e["event_id"][:_ID_CHARS] not in sent]

    def _convert_whole(self, path: Path, state: FileState) -> list[ImportResult] | None:
        options = ImportOptions(user_id=self.user_id,
                                base_time=datetime.fromisoformat(state.base_time))
        try:
            results = import_path(path, "auto", options)
        except (ImportFormatError, OSError, ValueError) as exc:  # torn JSON, locked store
            self.stats.skipped_files[str(path)] = str(exc)
            return None
        self.stats.skipped_files.pop(str(path), None)
        return results

    def _convert(self, path: Path, complete: bytes, state: FileState) -> ImportResult | None:
        records = _records(complete)
        options = ImportOptions(user_id=self.user_id,
                                base_time=datetime.fromisoformat(state.base_time))
        try:
            fmt = detect_format(None, records)
            result = import_records(records, fmt, options, path.name, _fallback_thread(records),
                                    path)
        except ImportFormatError as exc:
            self.stats.skipped_files[str(path)] = str(exc)
            return None
        self.stats.skipped_files.pop(str(path), None)
        return result

    # ------------------------------------------------------------------ ending
    def _end_idle_sessions(self) -> None:
        now = self.clock()
        for state in self.files.values():
            idle = now - state.last_growth >= self.idle_end_seconds
            if state.ended or not state.sent or not idle or not Path(state.path).exists():
                continue
            self._end(state)

    def _end(self, state: FileState) -> None:
        path = Path(state.path)
        key = _key(path)
        self._read(key, path, final=True)  # what was held back (a markdown tail) goes now
        if path.suffix == ".jsonl":
            data = path.read_bytes()
            result = self._convert(path, data[: data.rfind(b"\n") + 1], state)
            results = None if result is None else [result]
        else:
            results = self._convert_whole(path, state)
        if results is None:
            return
        ends = [e for r in results for e in r.events if e["kind"] == "session_end"]
        fresh = [e for e in ends if e["event_id"] not in self.ended_ids]
        if fresh:  # a rotated session's second file ends the same thread: flush only
            self.sink.send(fresh)
        for event in ends:
            self.sink.flush(event["user_id"], event["thread_id"])
            self.ended_ids.add(event["event_id"])
        state.ended = True
        self.stats.sessions_ended += 1
        self._save()

    def _save(self) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"files": {k: asdict(v) for k, v in self.files.items()},
                                   "ended": sorted(self.ended_ids)}, indent=1))
        os.replace(tmp, self.state_path)  # a crash leaves the old state or the new one


class SdkSink:
    """Send through :class:`breadcrumb.sdk.Breadcrumb` (HTTP or Kafka, Bearer key)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.accepted = 0
        self.duplicates = 0  # over HTTP: events the service already had

    def send(self, events: list[dict[str, Any]]) -> None:
        for thread in dict.fromkeys(e["thread_id"] for e in events):
            part = [e for e in events if e["thread_id"] == thread]
            result = self.client.add(part, thread_id=thread, user_id=part[0]["user_id"])
            self.accepted += result.accepted
            self.duplicates += result.duplicates
            if result.rejected:
                raise RuntimeError(f"{len(result.rejected)} events rejected: "
                                   f"{result.rejected[0].error}")

    def flush(self, user_id: str, thread_id: str) -> None:
        self.client.flush(thread_id, user_id=user_id)


def _records(complete: bytes) -> list[tuple[int, Any]]:
    out: list[tuple[int, Any]] = []
    for number, line in enumerate(complete.splitlines(), start=1):
        if line.strip():
            try:
                out.append((number, json.loads(line)))
            except ValueError:
                continue  # not JSON: `breadcrumb import` reports such lines
    return out


def _watched(path: Path) -> bool:
    """A file an agent saves its sessions in (by name; the content is checked on reading)."""
    name = path.name
    if path.suffix == ".jsonl":
        return True
    if path.suffix == ".json":
        if name == "ui_messages.json":  # the task's history beside it is read instead
            return not path.with_name("api_conversation_history.json").exists()
        return name in _JSON_NAMES or (name.startswith("session-") and
                                       path.parent.name == "chats")
    if path.suffix == ".db":
        return name.startswith("opencode")
    if path.suffix == ".md":
        return name == ".aider.chat.history.md" or path.parent.name == "history" and (
            path.parent.parent.name == ".specstory")
    return False


def _signature(path: Path) -> str:
    """Size and mtime of a file (and of an SQLite store's write-ahead log)."""
    parts = []
    for candidate in (path, path.with_name(path.name + "-wal")):
        if candidate.exists():
            info = candidate.stat()
            parts.append(f"{info.st_size}:{info.st_mtime_ns}")
    return "/".join(parts)


def _key(path: Path) -> str:
    info = path.stat()
    return f"{info.st_dev}:{info.st_ino}"


def _mtime(path: Path) -> str:
    return datetime.fromtimestamp(int(path.stat().st_mtime), UTC).isoformat()


def _fallback_thread(records: list[tuple[int, Any]]) -> str:
    """A thread for a transcript that names no session: its first record's digest."""
    first = json.dumps(records[0][1] if records else None, sort_keys=True)
    return "watch-" + hashlib.sha256(first.encode()).hexdigest()[:24]


def _load(path: Path) -> tuple[dict[str, FileState], set[str]]:
    if not path.exists():
        return {}, set()
    data = json.loads(path.read_text())
    files = {k: FileState(**v) for k, v in data.get("files", {}).items()}
    return files, set(data.get("ended", []))

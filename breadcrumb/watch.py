"""Live capture: tail agent session folders and publish each new record once.

:class:`Watcher` scans folders for ``*.jsonl`` transcripts (Claude Code sessions and
subagent files, Codex rollouts; format recognised by content), converts each file with
the importers — so the ids are the ones ``breadcrumb import`` gives — and sends the events
it has not sent before to a :class:`Sink`. Only complete lines count: a torn last line
waits for its newline. What was sent is saved in a JSON state file after every send
(per file: device and inode, bytes consumed, events sent), so a restarted watcher goes on
where it stopped; a file whose inode changed under its name (rotated) is a new file, and
the old one is finished under its new name when it is still in the folder. A file that
stops growing for ``idle_end_seconds`` has its session ended: the ``session_end`` events
are sent and each thread is flushed.
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
    import_records,
)

DEFAULT_FOLDERS = ("~/.claude/projects", "~/.codex/sessions")


class Sink(Protocol):
    """Where events go: the query service or Kafka (see :class:`SdkSink`)."""

    def send(self, events: list[dict[str, Any]]) -> None: ...

    def flush(self, user_id: str, thread_id: str) -> None: ...


@dataclass(slots=True)
class FileState:
    """What was read and sent of one file (keyed by device:inode)."""

    path: str
    consumed: int = 0  # bytes up to the last complete line read
    sent: int = 0  # events sent (session_end excluded), in conversion order
    base_time: str = ""  # for records without a time: fixed when first seen
    ended: bool = False
    last_growth: float = 0.0


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
                          if p.is_file() and (p.suffix == ".jsonl" or _key(p) in self.files)]
        return found

    def _read(self, key: str, path: Path) -> None:
        state = self.files.get(key)
        if state is None:
            state = self.files[key] = FileState(str(path), base_time=_mtime(path),
                                                last_growth=self.clock())
        state.path = str(path)
        data = path.read_bytes()
        if len(data) < state.consumed:  # truncated in place (copytruncate): a new file
            state.consumed, state.sent = 0, 0
        complete = data[: data.rfind(b"\n") + 1]
        if len(complete) <= state.consumed:
            return
        result = self._convert(path, complete, state)
        if result is None:
            return
        events = [e for e in result.events if e["kind"] != "session_end"]
        fresh = events[state.sent:]
        if fresh:
            self.sink.send(fresh)
            self.stats.events_sent += len(fresh)
        state.consumed, state.sent = len(complete), len(events)
        state.ended, state.last_growth = False, self.clock()
        self._save()

    def _convert(self, path: Path, complete: bytes, state: FileState) -> ImportResult | None:
        records = _records(complete)
        options = ImportOptions(user_id=self.user_id,
                                base_time=datetime.fromisoformat(state.base_time))
        try:
            fmt = detect_format(None, records)
            result = import_records(records, fmt, options, path.name, _fallback_thread(records))
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
        data = path.read_bytes()
        result = self._convert(path, data[: data.rfind(b"\n") + 1], state)
        if result is None:
            return
        ends = [e for e in result.events if e["kind"] == "session_end"]
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

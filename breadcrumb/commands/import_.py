"""``breadcrumb import``: real agent transcripts → events.

Claude Code, Codex, OpenAI chat, Gemini CLI, OpenCode, Cline / Roo, Copilot CLI, Cursor,
SpecStory and Aider. ``PATH`` is a transcript file or a folder (walked for ``*.jsonl`` /
``*.json``, SpecStory and aider ``*.md``, ``opencode.db``); the format is recognised by
content unless ``--format`` names it. Record types an importer does not know are kept as
notes and counted in the report (``unknown_records``). Feeds the same backend as
``breadcrumb ingest`` (a running service or the data dir), with a progress bar on stderr
and a JSON report on stdout.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import orjson

from breadcrumb import rejections
from breadcrumb.clients import service as local_client
from breadcrumb.importers import (
    FORMATS,
    ImportFormatError,
    ImportOptions,
    ImportResult,
    import_path,
    transcripts_in,
)
from breadcrumb.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``breadcrumb import``."""
    from breadcrumb.commands.options import common_options

    p = sub.add_parser("import", help="import agent transcripts (claude-code, codex, gemini, "
                       "opencode, cline, copilot, cursor, specstory, aider, openai)")
    common_options(p)
    p.add_argument("path", type=Path, help="a transcript file, or a folder to walk")
    p.add_argument("--format", dest="fmt", choices=("auto", *FORMATS), default="auto",
                   help="default: recognised from each file's content")
    p.add_argument("--user", default=None,
                   help="tenant (user_id) of the events (default: the API key's tenant, else "
                        "BREADCRUMB_USER_ID, else 'local')")
    p.add_argument("--project", default=None, help="project_id (default: from the transcript)")
    p.add_argument("--thread", default=None, help="thread_id (default: the session id)")
    p.add_argument("--agent", default=None, help="agent_id (default: the format's name)")
    p.add_argument("--base-time", default=None,
                   help="RFC 3339 time for records without one (default: the file's mtime)")
    p.add_argument("--batch", type=int, default=100,
                   help="events per request; progress is shown after each (100)")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds to wait for each batch to be stored (900)")
    p.set_defaults(handler=cmd_import)


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Convert the file(s), submit each in batches with a progress bar, print the report."""
    folder = args.path.is_dir()
    if folder and args.thread:
        sys.stderr.write("breadcrumb import: --thread names one thread; not with a folder\n")
        return 2
    backend = local_client.connect(settings, args.url)
    try:
        user = local_client.default_user(settings, args.user, local_client.service_url(backend))
        converted, unreadable = _convert_all(args, user, folder)
        if not folder and unreadable:
            sys.stderr.write(f"breadcrumb import: {unreadable[0]['error']}\n")
            return 2
        reports = [_submit(backend, path, result, args, user) for path, result in converted]
    finally:
        backend.close()
    several = folder or len(reports) > 1  # an OpenCode store, an aider history: many sessions
    report = reports[0] if not several and reports else _folder_report(reports, unreadable)
    sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    rejections.say("import", report["rejected"], sys.stderr,
                   None if several else args.path.name)
    return 0 if not report["rejected"] else 1


def _convert_all(args: argparse.Namespace, user: str, folder: bool
                 ) -> tuple[list[tuple[Path, ImportResult]], list[dict[str, Any]]]:
    """Each file converted, or named with the reason it was not a transcript."""
    paths = list(transcripts_in(args.path)) if folder else [args.path]
    converted: list[tuple[Path, ImportResult]] = []
    unreadable: list[dict[str, Any]] = []
    for path in paths:
        try:
            options = ImportOptions(user_id=user, project_id=args.project,
                                    thread_id=args.thread, agent_id=args.agent,
                                    base_time=_base_time(args.base_time, path))
            converted += [(path, result) for result in import_path(path, args.fmt, options)]
        except (ImportFormatError, OSError, ValueError) as exc:
            unreadable.append({"path": str(path), "error": str(exc)})
    return converted, unreadable


def _submit(backend: local_client.Backend, path: Path, result: ImportResult,
            args: argparse.Namespace, user: str) -> dict[str, Any]:
    report = submit_with_progress(backend, result.events, args.batch, args.timeout,
                                  f"importing {path.name}")
    # the service names refusals by 0-based position among the events sent: the report
    # names each by the transcript's own 1-based line instead (rejections.py)
    refused = rejections.by_line(report["rejected"], result.line_of,
                                 lambda i: result.events[i] if i < len(result.events) else None)
    report["rejected"] = rejections.in_file_order(result.bad_lines + refused)
    report.update({"path": str(path), "format": result.fmt, "events": len(result.events),
                   "thread_id": result.threads[0], "threads": result.threads,
                   "user_id": user, "skipped": dict(result.skipped),
                   "unknown_records": dict(result.unknown)})
    return report


def _folder_report(reports: list[dict[str, Any]],
                   unreadable: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over the files, each file's report, and the files that were skipped."""
    return {"files": reports, "skipped_files": unreadable,
            "accepted": sum(r["accepted"] for r in reports),
            "duplicates": sum(r["duplicates"] for r in reports),
            "events": sum(r["events"] for r in reports),
            "unknown_records": sum(sum(r["unknown_records"].values()) for r in reports),
            "rejected": [{**x, "path": r["path"]} for r in reports for x in r["rejected"]]}


def submit_with_progress(backend: local_client.Backend, events: list[dict[str, Any]],
                         batch: int, timeout: float, label: str) -> dict[str, Any]:
    """Ingest in batches (each stored before the next); the last batch flushes the thread."""
    bar = ProgressBar(len(events), label)
    totals: dict[str, Any] = {"accepted": 0, "duplicates": 0, "rejected": [], "seconds": 0.0}
    for offset in range(0, len(events), batch):
        part = backend.ingest(events[offset: offset + batch],
                              flush=offset + batch >= len(events), batch=batch,
                              timeout=timeout)
        totals["accepted"] += part["accepted"]
        totals["duplicates"] += part["duplicates"]
        totals["rejected"] += [{**r, "position": r["position"] + offset}
                               for r in part["rejected"]]
        totals["seconds"] = round(totals["seconds"] + part["seconds"], 3)
        bar.update(min(len(events), offset + batch))
    bar.close()
    return totals


class ProgressBar:
    """A one-line progress bar on stderr with the rate and the time left (no dependency).

    On a terminal the line is redrawn in place, and every second while a batch is being
    stored; elsewhere (a log file, a pipe) one line is written per step.
    """

    def __init__(self, total: int, label: str, width: int = 30, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, tick: float = 1.0) -> None:
        self.total = max(total, 1)
        self.label = label
        self.width = width
        self.stream = stream or sys.stderr
        self.clock = clock
        self.started = clock()
        self.done = 0
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = None
        if self.live and tick > 0:
            self._ticker = threading.Thread(target=self._tick, args=(tick,), daemon=True)
            self._ticker.start()
        self.update(0)

    def line(self) -> str:
        """``label [###---] 200/1000 events  12.5 events/s  elapsed 0:16  ETA 1:04``."""
        elapsed = max(self.clock() - self.started, 0.0)
        filled = self.width * self.done // self.total
        bar = "#" * filled + "-" * (self.width - filled)
        text = f"{self.label} [{bar}] {self.done}/{self.total} events  elapsed {_clock(elapsed)}"
        if self.done and elapsed > 0:
            rate = self.done / elapsed
            text += f"  {rate:.1f} events/s  ETA {_clock((self.total - self.done) / rate)}"
        return text

    def update(self, done: int) -> None:
        with self._lock:
            self.done = done
            self._draw()

    def _draw(self) -> None:
        self.stream.write(("\r\033[K" if self.live else "") + self.line()
                          + ("" if self.live else "\n"))
        self.stream.flush()

    def _tick(self, every: float) -> None:
        while not self._stop.wait(every):
            with self._lock:
                self._draw()

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.live:
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    """``1:04`` / ``2:03:10``."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _base_time(value: str | None, path: Path) -> datetime:
    if value is None:
        return datetime.fromtimestamp(int(path.stat().st_mtime), UTC)
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"--base-time {value!r} needs a UTC offset (e.g. 'Z')")
    return moment

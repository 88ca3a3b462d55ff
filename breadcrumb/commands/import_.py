"""``breadcrumb import``: real agent transcripts (Claude Code, Codex, OpenAI chat) → events.

Feeds the same backend as ``breadcrumb ingest`` (a running service or the data dir),
with a progress bar on stderr and a JSON report on stdout.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import orjson

from breadcrumb import client as local_client
from breadcrumb.commands.fleet import quiet_client_logs
from breadcrumb.importers import FORMATS, ImportFormatError, ImportOptions, import_file
from breadcrumb.infra.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``breadcrumb import``."""
    from breadcrumb.cli import _common

    p = sub.add_parser("import", help="import an agent transcript (claude-code, codex, openai)")
    _common(p)
    p.add_argument("path", type=Path, help="the transcript file")
    p.add_argument("--format", dest="fmt", choices=FORMATS, required=True)
    p.add_argument("--user", default="local", help="tenant (user_id) of the events")
    p.add_argument("--project", default=None, help="project_id (default: from the transcript)")
    p.add_argument("--thread", default=None, help="thread_id (default: the session id)")
    p.add_argument("--agent", default=None, help="agent_id (default: the format's name)")
    p.add_argument("--base-time", default=None,
                   help="RFC 3339 time for records without one (default: the file's mtime)")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--timeout", type=float, default=900.0)
    p.set_defaults(handler=cmd_import)


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Convert the file, submit it in batches with a progress bar, print the report."""
    quiet_client_logs()
    try:
        options = ImportOptions(user_id=args.user, project_id=args.project,
                                thread_id=args.thread, agent_id=args.agent,
                                base_time=_base_time(args.base_time, args.path))
        result = import_file(args.path, args.fmt, options)
    except (ImportFormatError, OSError, ValueError) as exc:
        sys.stderr.write(f"breadcrumb import: {exc}\n")
        return 2
    backend = local_client.connect(settings, args.url)
    try:
        report = submit_with_progress(backend, result.events, args.batch, args.timeout,
                                      f"importing {args.path.name}")
    finally:
        backend.close()
    report["rejected"] = result.bad_lines + report["rejected"]
    report.update({"events": len(result.events), "thread_id": result.events[0]["thread_id"],
                   "user_id": args.user, "skipped": dict(result.skipped)})
    sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0 if not report["rejected"] else 1


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
    """A one-line progress bar on stderr (no dependency)."""

    def __init__(self, total: int, label: str, width: int = 30,
                 stream: TextIO | None = None) -> None:
        self.total = max(total, 1)
        self.label = label
        self.width = width
        self.stream = stream or sys.stderr
        self.update(0)

    def update(self, done: int) -> None:
        filled = self.width * done // self.total
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{self.total} events")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def _base_time(value: str | None, path: Path) -> datetime:
    if value is None:
        return datetime.fromtimestamp(int(path.stat().st_mtime), UTC)
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"--base-time {value!r} needs a UTC offset (e.g. 'Z')")
    return moment

"""Rejections as ``ingest`` and ``import`` report them: by the 1-based line of the file.

The service names a refused event by the contract's ``position``, its 0-based index among
the events sent. A person reads a file by its lines, as an editor numbers them, so the
commands map each position back to the line the event came from and report that line
alone (a blank or unparsable line is not sent, so the two numberings differ).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TextIO

#: rejections written to stderr one a line; the JSON report on stdout lists them all
SHOWN = 10


def by_line(refused: list[dict[str, Any]], line_of: Callable[[int], int | None],
            event_of: Callable[[int], Mapping[str, Any] | None] | None = None
            ) -> list[dict[str, Any]]:
    """The service's refusals, each named by its file ``line`` instead of ``position``;
    an event that came from no line (``line: null``) keeps its ``event_id`` and ``kind``."""
    named: list[dict[str, Any]] = []
    for item in refused:
        entry = {k: v for k, v in item.items() if k != "position"}
        position = int(item["position"])
        entry["line"] = line_of(position)
        event = event_of(position) if event_of is not None else None
        if entry["line"] is None and isinstance(event, Mapping):
            entry.update({k: event[k] for k in ("event_id", "kind") if k in event})
        named.append(entry)
    return named


def in_file_order(rejected: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Line order; entries without a line (added by the importer) last."""
    return sorted(rejected, key=lambda r: (r.get("line") is None, r.get("line") or 0))


def say(command: str, rejected: list[dict[str, Any]], stream: TextIO,
        file_name: str | None = None) -> None:
    """One line per rejection on ``stream`` (``breadcrumb import: line 4 of s.jsonl: …``),
    the first :data:`SHOWN`, then how many more the report lists."""
    for entry in rejected[:SHOWN]:
        name = file_name or _name(entry.get("path"))
        where = f" of {name}" if name else ""
        if entry.get("line") is not None:
            at = f"line {entry['line']}{where}"
        else:
            kind = entry.get("kind", "event")
            origin = "added by the importer" if kind == "session_end" else "not from a line"
            at = f"event {entry.get('event_id', '?')} ({kind}, {origin}{where})"
        stream.write(f"breadcrumb {command}: {at}: {entry.get('error', 'rejected')}\n")
    if len(rejected) > SHOWN:
        stream.write(f"breadcrumb {command}: {len(rejected) - SHOWN} more rejected: "
                     "see the report's \"rejected\" list\n")


def _name(path: Any) -> str | None:
    return str(path).rsplit("/", 1)[-1] if path else None

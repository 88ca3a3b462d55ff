"""``breadcrumb stats`` (issue 49): the pipeline's counts and, embedded, the data dir's
``footprint`` (disk by part, resident memory, both per stored event): ``GET /v1/stats`` of
the service that owns the data dir (or ``--url``), else of the data dir opened here."""

from __future__ import annotations

import argparse
from typing import Any

from breadcrumb.commands.browse import call, run
from breadcrumb.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``breadcrumb stats``."""
    from breadcrumb.commands.options import common_options

    p = sub.add_parser("stats", help="counts, pending work and the data dir's footprint")
    common_options(p)
    p.add_argument("--json", action="store_true", help="print the API's JSON answer")
    p.set_defaults(handler=cmd_stats)


def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    """``stats``."""
    from breadcrumb.query_api.runtime import stats

    def fetch() -> Any:
        return call(settings, args, "GET", "/v1/stats", None, None, stats)

    return run(fetch, args.json, stats_lines)


def _size(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} GB"  # pragma: no cover (the loop returns at GB)


def stats_lines(answer: dict[str, Any]) -> str:
    """The counts, then the footprint (disk by part, memory), per stored event too."""
    memories = answer.get("memories") or {}
    out = [f"mode {answer.get('mode', '-')}  generation {answer.get('generation', '-')}",
           f"events: received {answer.get('events_received', 0)}  accepted "
           f"{answer.get('events_accepted', 0)}  processed {answer.get('events_processed', 0)}"
           f"  pending {answer.get('pending', 0)}  dead letters "
           f"{answer.get('dead_letters', 0)}",
           "memories: " + ("  ".join(f"{k} {v}" for k, v in
                                      sorted((memories.get("by_status") or {}).items()))
                           or "none")]
    foot = answer.get("footprint")
    if not foot:
        return "\n".join(out)
    n = int(foot.get("stored_events") or 0)
    disk = foot.get("disk_bytes") or {}
    out.append(f"footprint: {n} stored events")
    out.append(f"  {'disk':<18}{'total':>12}{'per event':>12}")
    for part in ("sqlite", "vector_segments", "vector_wal", "other", "total"):
        value = disk.get(part, 0)
        out.append(f"  {part:<18}{_size(value):>12}{_size(value / n if n else None):>12}")
    rss = foot.get("rss_bytes")
    if rss:
        out.append("  memory (resident, the answering process)")
        for kind in ("anonymous", "file_backed"):
            value = rss.get(kind, 0)
            out.append(f"  {kind:<18}{_size(value):>12}{_size(value / n if n else None):>12}")
    return "\n".join(out)

"""``footprint`` of ``GET /v1/stats`` (embedded, issue 49): what the data dir holds on disk,
by part, what the process holds in memory, and both per stored event.

Disk figures are allocated blocks, not apparent sizes (Qdrant preallocates sparse files:
a 32 MB WAL segment may hold a few KB). Parts: ``sqlite`` (the database files with their
``-wal``/``-shm``), ``vector_segments`` (Qdrant Edge segments: vectors, HNSW, sparse and
payload indexes, payloads), ``vector_wal`` (the shards' write-ahead logs) and ``other``.
Memory, from ``/proc/self/smaps_rollup`` (absent where there is none): ``anonymous`` (the
heap: caches, in-RAM indexes, SQLite's page cache) and ``file_backed``, the rest of ``Rss``
(mapped files: vector segments, WAL, libraries; the kernel can drop their clean pages).
A snapshot is reused for ``max_age`` seconds: walking the data dir and counting the events
is not free, and ``/v1/stats`` is polled.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PARTS = ("sqlite", "vector_segments", "vector_wal", "other")
_SQLITE_SUFFIXES = (".sqlite3", ".sqlite3-wal", ".sqlite3-shm", ".sqlite3-journal")


def _part(rel: tuple[str, ...]) -> str:
    if rel[-1].endswith(_SQLITE_SUFFIXES):
        return "sqlite"
    if "vectors" in rel:
        below = rel[rel.index("vectors") + 1:]
        return "vector_wal" if len(below) > 2 and below[1] == "wal" else "vector_segments"
    return "other"


def disk_bytes(data_dir: Path) -> dict[str, int]:
    """Allocated bytes under ``data_dir`` by part (:data:`PARTS`) and their ``total``."""
    out = dict.fromkeys(PARTS, 0)
    root = Path(data_dir)
    for folder, _dirs, files in os.walk(root):
        base = Path(folder).relative_to(root).parts
        for name in files:
            try:
                size = os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:  # deleted meanwhile (a WAL segment, a swapped shard)
                continue
            out[_part((*base, name))] += size
    out["total"] = sum(out[p] for p in PARTS)
    return out


def resident_bytes(rollup: Path = Path("/proc/self/smaps_rollup")) -> dict[str, int] | None:
    """``{"anonymous", "file_backed"}`` bytes resident in this process; None off Linux."""
    try:
        lines = rollup.read_text().splitlines()[1:]
    except OSError:
        return None
    fields = {}
    for line in lines:
        name, _, rest = line.partition(":")
        if rest.split():
            fields[name] = int(rest.split()[0]) * 1024
    if "Rss" not in fields or "Anonymous" not in fields:
        return None
    return {"anonymous": fields["Anonymous"], "file_backed": fields["Rss"] - fields["Anonymous"]}


def footprint(data_dir: Path, stored_events: int,
              rollup: Path = Path("/proc/self/smaps_rollup")) -> dict[str, Any]:
    """The ``footprint`` block (see the module doc); per-event figures are None at 0 events."""
    disk = disk_bytes(data_dir)
    out: dict[str, Any] = {"stored_events": stored_events, "disk_bytes": disk,
                           "disk_bytes_per_event": None}
    if stored_events:
        out["disk_bytes_per_event"] = round(disk["total"] / stored_events, 1)
    rss = resident_bytes(rollup)
    if rss is not None:
        out["rss_bytes"] = rss
        out["rss_bytes_per_event"] = ({k: round(v / stored_events, 1) for k, v in rss.items()}
                                      if stored_events else None)
    return out


class FootprintProbe:
    """:func:`footprint` of one data dir, recomputed at most every ``max_age`` seconds."""

    def __init__(self, data_dir: Path, count_events: Callable[[], int],
                 max_age: float = 10.0) -> None:
        self._data_dir = Path(data_dir)
        self._count = count_events
        self._max_age = max_age
        self._lock = threading.Lock()
        self._last: tuple[float, dict[str, Any]] | None = None

    def snapshot(self) -> dict[str, Any]:
        """The latest footprint, computed now when the last one is ``max_age`` old."""
        with self._lock:
            now = time.monotonic()
            if self._last is None or now - self._last[0] >= self._max_age:
                self._last = (now, footprint(self._data_dir, self._count()))
            return self._last[1]

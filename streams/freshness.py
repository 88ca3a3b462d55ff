"""Freshness: how long an accepted event takes to become recallable.

The embedded runner records, for each log entry it applies, the time from its
``accepted_at`` (written with the entry, before the HTTP 202) to the commit of the batch
that applied it — from then on recall finds it (in its thread's open window, the fresh
tail, or in the memory it closed). Entries that closed a range also count as *memory*
freshness: accepted → the range's memory (summary, hints and vectors) written and
searchable. Percentiles are over a ring buffer of the most recent entries.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from datetime import datetime
from typing import Any

RECENT = 4096


def accepted_epoch(accepted_at: str) -> float | None:
    """``event_log.accepted_at`` (ISO 8601, UTC) as epoch seconds; None if unreadable."""
    try:
        return datetime.fromisoformat(accepted_at).timestamp()
    except ValueError:
        return None


class Freshness:
    """Ring buffers of accepted → recallable and accepted → memory latencies (seconds)."""

    def __init__(self, size: int = RECENT) -> None:
        self.recallable: deque[float] = deque(maxlen=size)
        self.memory: deque[float] = deque(maxlen=size)
        self.count = 0  # entries measured since start
        self._lock = threading.Lock()

    def record(self, recallable: Iterable[float], memory: Iterable[float] = ()) -> None:
        with self._lock:
            for value in recallable:
                self.recallable.append(max(0.0, value))
                self.count += 1
            for value in memory:
                self.memory.append(max(0.0, value))

    def summary(self) -> dict[str, Any]:
        """``{"recallable_ms": {"p50", "p95", "samples"}, "memory_ms": {...}, "measured"}``
        (p50 / p95 null before the first sample)."""
        with self._lock:
            recallable, memory, count = list(self.recallable), list(self.memory), self.count
        return {"recallable_ms": _quantiles(recallable), "memory_ms": _quantiles(memory),
                "measured": count}


def _quantiles(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {"p50": _ms(ordered, 0.5), "p95": _ms(ordered, 0.95), "samples": len(ordered)}


def _ms(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(1000.0 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


# --- cluster mode: a histogram in the SQL counters (issue 14) ----------------------------
# Workers are separate processes; /v1/stats is served by another. Each worker adds its
# batch's latencies to counters ``freshness_<stage>_le_<ms>`` (log-spaced buckets, the
# upper bound in ms) in the batch's own transaction: summed over every worker, exact under
# redelivery (a message is counted once, by its Kafka position, like the other counters).
#: Bucket upper bounds in ms: 10 ms × 1.25^k up to ~30 min, then one open bucket.
BUCKETS_MS: tuple[int, ...] = tuple(sorted({round(10 * 1.25 ** k) for k in range(54)}))
_PREFIX = "freshness_"


def bucket_counter(stage: str, seconds: float) -> str:
    """The counter that one latency of ``stage`` (recallable | memory) adds to."""
    ms = max(0.0, seconds) * 1000.0
    for bound in BUCKETS_MS:
        if ms <= bound:
            return f"{_PREFIX}{stage}_le_{bound}"
    return f"{_PREFIX}{stage}_le_inf"


def summary_from_counters(counters: dict[str, int]) -> dict[str, Any]:
    """:meth:`Freshness.summary` from the histogram counters (every event since the
    database was created, all workers): p50 / p95 are bucket upper bounds (≤ 25 % above
    the true value), ``measured`` the events counted."""
    out: dict[str, Any] = {}
    for stage in ("recallable", "memory"):
        counts: list[tuple[float, int]] = []
        for bound in BUCKETS_MS:
            n = counters.get(f"{_PREFIX}{stage}_le_{bound}", 0)
            if n:
                counts.append((float(bound), n))
        n_inf = counters.get(f"{_PREFIX}{stage}_le_inf", 0)
        if n_inf:
            counts.append((float("inf"), n_inf))
        total = sum(n for _b, n in counts)
        out[f"{stage}_ms"] = {"p50": _bucket(counts, total, 0.5),
                              "p95": _bucket(counts, total, 0.95), "samples": total}
    out["measured"] = out["recallable_ms"]["samples"]
    out["histogram"] = "bucket upper bounds, all workers, since the database was created"
    return out


def _bucket(counts: list[tuple[float, int]], total: int, q: float) -> float | None:
    if not total:
        return None
    seen, rank = 0, min(total - 1, int(q * total))
    for bound, n in counts:
        seen += n
        if seen > rank:
            return None if bound == float("inf") else bound
    return None

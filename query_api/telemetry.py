"""In-process telemetry for the dashboard and ``/metrics``; structured (JSON) logs.

One :class:`Telemetry` per app (``telemetry_of(app)``). Pipeline figures are polled from
``GET /v1/stats`` (``query_api.app.stats``), so they work in both modes; rates are deltas
between samples. Recalls cannot be polled: the recall endpoint hands each response to
:meth:`Telemetry.record_recall`, which feeds a ring buffer of recent recalls and the
Prometheus counter and histogram kept in the app's own ``CollectorRegistry``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter as Tally
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from breadcrumb.logs import (  # noqa: F401  (re-exported: they lived here)
    TEXT_FORMAT,
    JsonFormatter,
    configure_logging,
    uvicorn_log_config,
)
from breadcrumb.query_api.recall.stages import STAGES
from breadcrumb.stores.ports import StatusTierGrid

log = logging.getLogger(__name__)

RECENT_RECALLS = 50
HISTORY_SAMPLES = 120
RATE_WINDOW_SECONDS = 5.0
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
QUERY_PREVIEW_CHARS = 80

StatsFn = Callable[[], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class RecallRecord:
    """One answered recall as the dashboard shows it."""

    at: str
    user_id: str
    query: str
    classification: str
    level: int
    latency_ms: float
    memories: int
    evidence: int
    token_cost: int


@dataclass(frozen=True, slots=True)
class Sample:
    """Pipeline counters at one instant (``t`` is monotonic seconds)."""

    t: float
    at: str
    received: int
    processed: int
    pending: int
    memories: int


class RateWindow:
    """A ring buffer of :class:`Sample` giving events/s in and derived (processed)."""

    def __init__(self, size: int = HISTORY_SAMPLES, window: float = RATE_WINDOW_SECONDS) -> None:
        self.samples: deque[Sample] = deque(maxlen=size)
        self.window = window

    def add(self, sample: Sample) -> None:
        self.samples.append(sample)

    def rates(self) -> dict[str, float]:
        """Per-second deltas between the newest sample and the oldest one in the window."""
        if len(self.samples) < 2:
            return {"events_in_per_s": 0.0, "derived_per_s": 0.0, "memories_per_s": 0.0}
        newest, base = self.samples[-1], self.samples[-2]
        for sample in reversed(list(self.samples)[:-2]):  # oldest sample inside the window
            if newest.t - sample.t > self.window:
                break
            base = sample
        return _per_second(base, newest)

    def history(self) -> list[dict[str, Any]]:
        """One point per sample: wall time, rates since the previous sample, pending."""
        points: list[dict[str, Any]] = []
        pairs = zip(list(self.samples)[:-1], list(self.samples)[1:], strict=False)
        for before, after in pairs:
            points.append({"at": after.at, "pending": after.pending, **_per_second(before, after)})
        return points


def _per_second(before: Sample, after: Sample) -> dict[str, float]:
    span = max(after.t - before.t, 1e-6)
    return {
        "events_in_per_s": round(max(after.received - before.received, 0) / span, 3),
        "derived_per_s": round(max(after.processed - before.processed, 0) / span, 3),
        "memories_per_s": round(max(after.memories - before.memories, 0) / span, 3),
    }


class Telemetry:
    """Counters, recent recalls and rate history of one app; thread-safe."""

    def __init__(
        self,
        stats_fn: StatsFn,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
        min_interval: float = 0.5,
    ) -> None:
        self.stats_fn = stats_fn
        self.clock = clock
        self.wall = wall
        self.min_interval = min_interval
        self.rates = RateWindow()
        self.recent: deque[RecallRecord] = deque(maxlen=RECENT_RECALLS)
        self.by_classification: Tally[str] = Tally()
        self.stats_errors = 0
        self._cached: tuple[float, dict[str, Any]] | None = None
        self._lock = threading.Lock()
        self.registry = CollectorRegistry()
        self.recalls_total = Counter(
            "breadcrumb_recalls", "Recalls answered, by Decide classification and level.",
            ["classification", "level"], registry=self.registry)
        self.recall_latency = Histogram(
            "breadcrumb_recall_latency_seconds", "Recall latency (Retrieve to Extract).",
            buckets=LATENCY_BUCKETS, registry=self.registry)
        self.recall_stage = Histogram(
            "breadcrumb_recall_stage_seconds",
            "Recall time per pipeline stage (a response's timings_ms).",
            ["stage"], buckets=LATENCY_BUCKETS, registry=self.registry)
        for stage in STAGES:  # every stage's series exists from the start
            self.recall_stage.labels(stage)
        self.registry.register(StatsCollector(self))

    # ------------------------------------------------------------------ recalls
    def record_recall(self, response: Mapping[str, Any], user_id: str = "") -> None:
        """Count one RecallResponse (call it from the recall endpoint)."""
        record = RecallRecord(
            at=self.wall().isoformat(timespec="seconds"),
            user_id=user_id,
            query=str(response.get("query", ""))[:QUERY_PREVIEW_CHARS],
            classification=str(response.get("classification", "unknown")),
            level=int(response.get("level", 0)),
            latency_ms=float(response.get("latency_ms", 0.0)),
            memories=len(response.get("memories") or []),
            evidence=len(response.get("evidence") or []),
            token_cost=int(response.get("token_cost", 0)),
        )
        self.recalls_total.labels(record.classification, str(record.level)).inc()
        self.recall_latency.observe(record.latency_ms / 1000.0)
        for stage, ms in (response.get("timings_ms") or {}).items():
            if stage in STAGES:
                self.recall_stage.labels(stage).observe(float(ms) / 1000.0)
        with self._lock:
            self.recent.append(record)
            self.by_classification[record.classification] += 1

    def recall_summary(self, limit: int = 20) -> dict[str, Any]:
        """Totals, latency percentiles over the ring buffer and the newest recalls first."""
        with self._lock:
            records = list(self.recent)
            by_class = dict(self.by_classification)
        latencies = sorted(r.latency_ms for r in records)
        return {
            "total": sum(by_class.values()),
            "by_classification": by_class,
            "latency_ms": {"p50": _percentile(latencies, 0.5), "p95": _percentile(latencies, 0.95)},
            "recent": [asdict(r) for r in reversed(records[-limit:])],
        }

    # ------------------------------------------------------------------ pipeline
    def snapshot(self, fresh: bool = False) -> dict[str, Any]:
        """Stats + rates + history + recalls.

        Stats are read at most every ``min_interval`` (shared by every dashboard viewer)
        unless ``fresh``. Raises what the stats function raises (counted in ``stats_errors``).
        """
        with self._lock:
            now = self.clock()
            cached = self._cached
            if fresh or cached is None or now - cached[0] >= self.min_interval:
                cached = self._cached = (now, self._sample(now))
            pipeline = cached[1]
        return {**pipeline, "recalls": self.recall_summary()}

    def _sample(self, now: float) -> dict[str, Any]:
        try:
            stats = self.stats_fn()
        except Exception:
            self.stats_errors += 1
            raise
        at = self.wall().isoformat(timespec="seconds")
        memories = stats.get("memories") or {}
        self.rates.add(Sample(
            t=now, at=at,
            received=int(stats.get("events_received", 0)),
            processed=int(stats.get("events_processed", 0)),
            pending=int(stats.get("pending", 0)),
            memories=sum((memories.get("by_status") or {}).values()),
        ))
        return {
            "at": at,
            "stats": stats,
            "rates": self.rates.rates(),
            "history": self.rates.history(),
            "stats_errors": self.stats_errors,
        }


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(q * len(values)))], 3)


# ---------------------------------------------------------------------- metrics
COUNTERS = {
    "events_received": "Events received over HTTP, the CLI or the SDK straight to Kafka (once).",
    "events_accepted": "Events accepted (valid and not duplicates).",
    "events_processed": "Events processed by the pipeline (derived into ranges).",
    "duplicates": "Events dropped as duplicates of an event_id already stored.",
    "dead_lettered": "Messages the pipeline gave up on (dead-lettered with reason, position).",
    "retries": "Failed attempts retried by the failure policy (store down, deadlock, ...).",
    "redeliveries": "Messages delivered again after a restart and skipped (already applied).",
}
GAUGES = {
    "pending": "Accepted events not yet processed.",
    "unprocessed": "Events in the log not yet processed.",
    "consumer_lag": "Kafka consumer lag of the processors (0 in embedded mode).",
    "dead_letters": "Events kept in the dead-letter store.",
}


class StatsCollector(Collector):
    """Turns the telemetry snapshot into ``breadcrumb_*`` metric families on each scrape."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry

    def collect(self) -> Iterator[Any]:
        up = GaugeMetricFamily("breadcrumb_stats_up", "1 when the stats could be read.")
        try:
            stats: dict[str, Any] | None = self.telemetry.snapshot(fresh=True)["stats"]
        except Exception as exc:  # a scrape must still answer: counted, logged, up=0
            log.warning("metrics: reading stats failed: %s", exc)
            stats = None
        up.add_metric([], 0.0 if stats is None else 1.0)
        yield up
        yield CounterMetricFamily("breadcrumb_stats_errors", "Failed reads of the stats.",
                                  value=self.telemetry.stats_errors)
        if stats is not None:
            yield from stats_families(stats)


def stats_families(stats: Mapping[str, Any]) -> Iterator[Any]:
    """The metric families for one ``/v1/stats`` body."""
    for name, doc in COUNTERS.items():
        yield CounterMetricFamily(f"breadcrumb_{name}", doc, value=float(stats.get(name, 0)))
    for name, doc in GAUGES.items():
        yield GaugeMetricFamily(f"breadcrumb_{name}", doc, value=float(stats.get(name, 0)))
    yield from freshness_family(stats.get("freshness"))
    memories = stats.get("memories") or {}
    for label in ("status", "tier"):
        family = GaugeMetricFamily(f"breadcrumb_memories_by_{label}",
                                   f"Memories by {label}.", labels=[label])
        for value, count in sorted((memories.get(f"by_{label}") or {}).items()):
            family.add_metric([value], float(count))
        yield family
    if "by_status_tier" in memories:
        grid = GaugeMetricFamily("breadcrumb_memories", "Memories by status and tier.",
                                 labels=["status", "tier"])
        for status, tier, count in memories["by_status_tier"]:
            grid.add_metric([str(status), str(tier)], float(count))
        yield grid


def freshness_family(freshness: Mapping[str, Any] | None) -> Iterator[Any]:
    """``breadcrumb_freshness_seconds{stage, quantile}``: accepted → recallable / memory."""
    if not freshness:
        return
    family = GaugeMetricFamily("breadcrumb_freshness_seconds",
                               "Event accepted to recallable (stage=recallable) or to its "
                               "memory written (stage=memory), recent entries.",
                               labels=["stage", "quantile"])
    for stage in ("recallable", "memory"):
        figures = freshness.get(f"{stage}_ms") or {}
        for quantile, label in (("p50", "0.5"), ("p95", "0.95")):
            value = figures.get(quantile)
            if value is not None:
                family.add_metric([stage, label], float(value) / 1000.0)
    yield family


_CREATE_LOCK = threading.Lock()


def telemetry_of(app: Any) -> Telemetry:
    """The app's :class:`Telemetry`, created on first use from ``app.state.runtime``."""
    existing: Telemetry | None = getattr(app.state, "telemetry", None)
    if existing is not None:
        return existing
    with _CREATE_LOCK:
        existing = getattr(app.state, "telemetry", None)
        if existing is None:
            existing = Telemetry(_runtime_stats(app.state.runtime))
            app.state.telemetry = existing
    return existing


def _runtime_stats(runtime: Any) -> StatsFn:
    def fetch() -> dict[str, Any]:
        from breadcrumb.query_api.runtime import stats

        result: dict[str, Any] = stats(runtime)
        memories = runtime.memories
        if isinstance(memories, StatusTierGrid):  # [(status, tier, count), ...]
            grid = memories.memory_counts_by_status_tier()
            result["memories"] = {**result["memories"], "by_status_tier": [list(r) for r in grid]}
        return result

    return fetch

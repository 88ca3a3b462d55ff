"""Rebuilding a new generation of the embedded stores by replaying the event log.

Each generation keeps its own cursor into the log (the ``applied_seq`` counter in its
derived store, ``streams.embedded.log_unit.LogCursor``), written in the same transaction
as the derived rows by the ingest core's unit of work (``streams.ingest_core``), so a crash
resumes at the right entry and a replayed generation can catch up with the live log before
the alias is switched to it. The replay shares the core and the log unit with the live loop
(``streams.embedded.runner``); every entry is checked against the erasures again when it is
applied (an erasure after intake must not come back).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from breadcrumb.stores.ports.tables import EventLog, Store
from breadcrumb.streams.embedded.log_unit import applied_seq, log_items, log_unit
from breadcrumb.streams.failure_policy import FailurePolicy, describe
from breadcrumb.streams.ingest_core import Retrying
from breadcrumb.streams.service import IngestService

log = logging.getLogger(__name__)


def abandoned_builds(generations: dict[str, dict[str, Any]], now: datetime,
                     stale_seconds: float) -> list[str]:
    """Generations still ``building`` whose replay stopped: no heartbeat (or, before the
    first one, no creation) within ``stale_seconds`` of ``now``. A killed replay leaves
    one; it is then marked failed (and may be removed)."""
    out = []
    for name, info in generations.items():
        if info.get("state") != "building":
            continue
        seen = info.get("heartbeat_at") or info.get("created_at")
        try:
            last = datetime.fromisoformat(str(seen))
        except ValueError:
            last = None
        if last is None or last.tzinfo is None or (now - last).total_seconds() > stale_seconds:
            out.append(name)
    return out


@dataclass(slots=True)
class Progress:
    """Where a replay is: entries applied of the log's size, rate and ETA."""

    generation: str
    applied: int = 0
    total: int = 0
    started: float = 0.0
    state: str = "running"
    error: str | None = None

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.applied / elapsed if elapsed > 0 else 0.0

    @property
    def eta_seconds(self) -> float | None:
        rate = self.rate
        return (self.total - self.applied) / rate if rate > 0 else None

    def to_dict(self) -> dict[str, Any]:
        eta = self.eta_seconds
        return {"generation": self.generation, "applied": self.applied, "total": self.total,
                "events_per_second": round(self.rate, 1),
                "eta_seconds": None if eta is None else round(eta, 1),
                "state": self.state, "error": self.error}


class Replayer:
    """Feeds every log entry, in order, to a fresh generation's ingest service."""

    def __init__(self, log: EventLog, derived: Store, service: IngestService,
                 progress: Progress,
                 on_progress: Callable[[Progress], None] | None = None,
                 batch: int = 256, policy: FailurePolicy | None = None,
                 sleep: Callable[[float], object] = time.sleep) -> None:
        self.log = log
        self.retrying = Retrying(policy)
        self.derived = derived
        self.service = service
        self.progress = progress
        self.on_progress = on_progress
        self.batch = batch
        self.sleep = sleep

    def catch_up(self) -> int:
        """Apply everything the log holds now; returns how many entries were applied."""
        applied = 0
        cursor = applied_seq(self.derived)
        self.progress.total = self.progress.applied + self.log.count_log_after(cursor)
        unit = log_unit(self.derived, self.service)
        while True:
            entries = self.log.read_log_all(cursor, self.batch)
            if not entries:
                return applied
            items = log_items(entries)
            try:  # one commit, one embedding call, one vector upsert per batch
                unit.apply(items)
            except Exception as exc:  # never stop for one bad entry: redo this batch one
                log.warning("replay batch after %s failed (%s); entry by entry", cursor,
                            describe(exc))
                for item in items:  # entry at a time under the failure policy
                    self.retrying.until_done(
                        item.position, partial(unit.apply_one, item),
                        partial(unit.give_up, item), self.sleep)
            cursor = entries[-1][0]
            applied += len(entries)
            self.progress.applied += len(entries)
            if self.on_progress is not None:
                self.on_progress(self.progress)

    def remaining(self) -> int:
        return int(self.log.count_log_after(applied_seq(self.derived)))

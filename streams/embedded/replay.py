"""Applying the embedded event log to a generation, and rebuilding a new generation by replay.

Each generation keeps its own cursor into the log (the ``applied_seq`` counter in its
derived store, :class:`LogCursor`), written in the same transaction as the derived rows
by the ingest core's unit of work (``streams.ingest_core``), so a crash resumes at the
right entry and a replayed generation can catch up with the live log before the alias is
switched to it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

import orjson

from breadcrumb.stores.ports.tables import EventLog, Store
from breadcrumb.streams.failure_policy import FailurePolicy, describe, log_position
from breadcrumb.streams.ingest_core import Item, Retrying, UnitOfWork
from breadcrumb.streams.service import IngestService, PassageSink
from breadcrumb.streams.tracking import count_dead_letter, count_outcome

log = logging.getLogger(__name__)
CURSOR = "applied_seq"


def applied_seq(derived: Store) -> int:
    """The last log position this generation has applied."""
    return int(derived.counters.get_counters().get(CURSOR, 0))


def log_items(entries: Sequence[tuple[int, str]]) -> list[Item]:
    """Embedded log entries ``(seq, payload)`` as ingest items (the log holds JSON only:
    the gateway wrote it)."""
    return [Item(log_position(seq), orjson.loads(payload), payload, seq=seq)
            for seq, payload in entries]


class LogCursor:
    """The ingest core's cursor over the embedded log: a generation's ``applied_seq`` (or
    the fair runner's marks, ``mark(applied items)``), moved in the unit's transaction;
    each entry is counted once since the cursor moves with its counters."""

    def __init__(self, derived: Store, mark: Callable[[Sequence[Item]], None] | None = None
                 ) -> None:
        self.derived = derived
        self.mark = mark

    def count(self, tally: Any, item: Item, outcome: str, retries: int, closed: bool) -> None:
        if outcome == "dead_lettered":
            count_dead_letter(tally, retries)
        else:
            count_outcome(tally, outcome, retries)

    def advance(self, tally: Any, items: Sequence[Item]) -> None:
        if not items:
            return
        if self.mark is not None:
            self.mark(items)
        elif (seq := items[-1].seq) is not None:  # a log entry's position (always set)
            self.derived.counters.set_counter(CURSOR, seq)


def log_unit(derived: Store, service: IngestService,
             mark: Callable[[Sequence[Item]], None] | None = None,
             lane: PassageSink | None = None) -> UnitOfWork:
    """A unit of work on a generation's store: its transaction, the log cursor."""

    @contextmanager
    def scope(_items: Sequence[Item], _letters: Any) -> Iterator[IngestService]:
        with derived.transaction():
            yield service

    return UnitOfWork(derived, scope, partial(LogCursor, derived, mark), lane=lane)


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

"""The embedded live loop: read a batch of the log, apply it, commit, acknowledge.

One :class:`LiveLoop` per generation of derived stores (the runner makes a new one when it
switches generation). Each turn (:meth:`LiveLoop.step`) is the whole loop:

1. **read** the next entries the fair schedule picks (``streams.embedded.fair_schedule``:
   round-robin by tenant, each thread's entries in log order) with their payloads;
2. **apply** them as one unit of the ingest core (``streams.ingest_core`` through
   ``streams.embedded.log_unit``) — rehearsed first when embedding is slow
   (``streams.rehearsal``), so the vectors are embedded outside the store lock;
3. **commit**: the unit's transaction writes the derived rows, the counters and the
   schedule's marks together (a crash resumes exactly at the unapplied entries);
4. **acknowledge**: the entries leave the schedule, are flagged in the log, and their
   freshness and the threads' idle clocks are recorded.

A unit that fails is rolled back and its entries are taken one at a time under the one
failure policy (``streams.ingest_core.Retrying``). The replay of a new generation
(``streams.embedded.replay``) shares the core and the log unit, not this loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.streams.embedded.fair_schedule import FairSchedule, Marks
from breadcrumb.streams.embedded.log_unit import log_items, log_unit
from breadcrumb.streams.failure_policy import describe
from breadcrumb.streams.freshness import Freshness
from breadcrumb.streams.ingest_core import Item, Retrying, UnitOfWork
from breadcrumb.streams.passage_lane import PassageLane
from breadcrumb.streams.rehearsal import rehearse
from breadcrumb.streams.service import HandleResult, IngestService
from breadcrumb.streams.tracking import IdleTracker
from breadcrumb.topics.records import thread_key

log = logging.getLogger(__name__)
Entry = tuple[int, str, str]  # (log position, thread key, payload)


class Gauge:
    """How many threads are inside ``with gauge:`` right now (submits waiting for the
    store: a batch then ends early)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self.count += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.count -= 1


class LiveLoop:
    """The live loop over one generation (``derived``, its ``service``, its schedule and
    passage lane); the runner holds its lock around each :meth:`step`."""

    def __init__(self, log_store: SqliteStore, derived: Any, service: IngestService,
                 sched: FairSchedule, lane: PassageLane | None, retrying: Retrying,
                 intake: Gauge, freshness: Freshness, idle: IdleTracker,
                 monotonic: Callable[[], float], batch_max_ms: float) -> None:
        self.store = log_store  # the event log
        self.derived = derived  # the generation's store (the log store for ``main``)
        self.service = service
        self.sched = sched
        self.lane = lane
        self.retrying = retrying
        self.intake = intake
        self.freshness = freshness
        self.idle = idle
        self.monotonic = monotonic
        self.batch_max_ms = batch_max_ms
        self.single: list[Entry] = []  # a failed batch's entries, now one at a time
        self._lane_at = monotonic()  # when the passage lane last had a slice

    def step(self, limit: int) -> int:
        """One turn: read, apply, commit, acknowledge; returns the entries handled."""
        if self.single:  # a failed batch's entries, one at a time
            return self._apply_singly()
        entries = self._read(limit)
        if not entries:
            return self.passages(log_busy=False)
        if len(entries) > 1:
            handled = self._apply_batch(entries)
            if handled:
                return handled + self.passages(log_busy=True)
        self.single = entries
        return self._apply_singly()

    def _read(self, limit: int) -> list[Entry]:
        self.sched.scan(self.store.log)
        picked = self.sched.pick(limit)
        if not picked:
            return []
        payloads = self.store.log.read_log_entries([seq for seq, _key in picked])
        return [(seq, key, payloads[seq]) for seq, key in picked]

    def _unit(self, picked: Sequence[tuple[int, str]], written: list[Marks]) -> UnitOfWork:
        """A unit of work whose cursor writes the schedule's marks for the applied entries
        of ``picked`` (kept in ``written``), inside the unit's transaction."""

        def mark(items: Sequence[Item]) -> None:
            marks = self.sched.marks_for(picked[:len(items)])
            marks.write(self.derived.counters)
            written.append(marks)
            if self.derived is self.store:  # the log's flags commit with the batch
                self.store.log.mark_processed_many([seq for seq, _key in picked[:len(items)]])

        return log_unit(self.derived, self.service, mark, self.lane)

    def _apply_batch(self, entries: list[Entry]) -> int:
        deadline = self.monotonic() + self.batch_max_ms / 1000.0

        def enough() -> bool:  # intake first: an accepted event's 202 never waits a batch
            return self.intake.count > 0 or self.monotonic() >= deadline

        items = log_items([(seq, payload) for seq, _key, payload in entries])
        written: list[Marks] = []
        unit = self._unit([(seq, key) for seq, key, _payload in entries], written)
        rehearsed, prepared = rehearse(unit, self.service, items, enough)
        try:  # a rehearsal's vectors ready: the same entries, the store lock for the writes
            result = unit.apply(items[:rehearsed] if rehearsed else items,
                                enough=None if rehearsed else enough, prepared=prepared)
        except Exception as exc:  # redo these entries one by one under the failure policy
            self._discard()
            log.warning("batch of %s log entries after %s failed (%s); one at a time",
                        len(entries), self.sched.low, describe(exc))
            return 0
        handled = len(result.results)
        self._done(entries[:handled], items[:handled], written[-1], result.results,
                   flagged=self.derived is self.store)
        return handled

    def _apply_singly(self) -> int:
        handled = 0
        while self.single:
            seq, key, payload = self.single[0]
            item, = log_items([(seq, payload)])
            written: list[Marks] = []
            unit = self._unit([(seq, key)], written)
            try:
                result = self.retrying.attempt(item.position, partial(unit.apply_one, item),
                                               partial(unit.give_up, item))
            except Exception:  # retried on a later call, after retry_delay
                self._discard()
                raise
            self.single.pop(0)
            outcome = result.results[0]
            self._done([(seq, key, payload)], [item], written[-1],
                       [None if outcome.outcome == "dead_lettered" else outcome])
            handled += 1
        return handled

    def _done(self, done: Sequence[Entry], items: Sequence[Item], marks: Marks,
              results: Sequence[HandleResult | None], flagged: bool = False) -> None:
        """Acknowledge committed entries (``items``: the same entries as decoded for the
        unit): out of the schedule, flagged in the log (unless ``flagged`` in their
        transaction), their freshness (accepted → recallable; → memory for those closing a
        range), their threads' idle clocks."""
        accepted = self.sched.commit([(seq, key) for seq, key, _payload in done], marks)
        if self.lane is not None:
            self.lane.committed()
        now = time.time()
        self.freshness.record(
            (now - at for at in accepted if at is not None),
            (now - at for at, result in zip(accepted, results, strict=False)
             if at is not None and result is not None and result.observations))
        if not flagged:
            self.store.log.mark_processed_many([seq for seq, _key, _payload in done])
        for item in items:
            entry = item.entry
            if isinstance(entry, dict) and isinstance(entry.get("user_id"), str):
                self.idle.touch(thread_key(str(entry["user_id"]), str(entry.get("thread_id"))),
                                entry)  # (else rejected: no thread to flush)

    def _discard(self) -> None:
        if self.lane is not None:
            self.lane.discard()

    def passages(self, log_busy: bool) -> int:
        """A slice of the passage lane when the log is idle, or once a second under load
        (memories first, the passages still follow)."""
        lane = self.lane
        if lane is None or not lane.pending:
            return 0
        now = self.monotonic()
        if log_busy and now - self._lane_at < 1.0:
            return 0
        self._lane_at = now
        return lane.work()

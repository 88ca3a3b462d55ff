"""The embedded driver: a durable SQLite log drained fairly by one background thread.

``submit`` appends accepted events to the log in one transaction (durable before the
HTTP 202). The processing thread applies the log in micro-batches (up to ``batch_entries``
entries, closing a batch once ``batch_max_ms`` of work is spent) to the current
*generation* of derived stores (see ``stores.generations.embedded``): one transaction per batch that
also writes that generation's marks into the log, one embedding call for the texts of every
range the batch closes (across threads) and one vector upsert. A batch's entries are picked
fairly (``streams.embedded.fair_schedule``): round-robin by tenant, a bounded share per tenant and
thread, each thread's entries in log order — one tenant's huge batch no longer holds
another tenant's event behind it. The marks (a low-water mark plus a position per thread
ahead of it) move with the writes, so a crash or restart resumes exactly at the unapplied
entries, and a replayed generation can take over at a precise log position. If a batch
fails it is rolled back and its entries are applied one at a time under the failure
policy, so a bad entry is retried or dead-lettered without losing the others.
Idle threads get a flush marker appended to the same log, so a replay reproduces every cut.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import orjson

from breadcrumb.processors.validate import NO_LIMITS, EventLimits
from breadcrumb.stores.ports import DeferredFlush
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.streams.embedded.fair_schedule import CURSOR, FairSchedule, Marks, thread_marks
from breadcrumb.streams.embedded.replay import log_items, log_unit
from breadcrumb.streams.erased import drop_erased
from breadcrumb.streams.failure_policy import FailurePolicy, describe
from breadcrumb.streams.freshness import Freshness
from breadcrumb.streams.gateway import SubmitResult, check_batch
from breadcrumb.streams.ingest_core import Item, Retrying, UnitOfWork
from breadcrumb.streams.passage_lane import PassageLane
from breadcrumb.streams.rehearsal import rehearse
from breadcrumb.streams.service import HandleResult, IngestService
from breadcrumb.streams.tracking import RELIABILITY_COUNTERS, IdleTracker
from breadcrumb.topics.records import FlushMarker, split_thread_key, thread_key

log = logging.getLogger(__name__)
Entry = tuple[int, str, str]  # (log position, thread key, payload)


class EmbeddedRunner:
    """Gateway + processor loop for the embedded default.

    Why so many methods: it is the Gateway port (submit, request_flush, pending,
    unprocessed, wait_processed, counters, freshness) and the processor loop in one
    object, because both share the log store, its lock and the fair schedule (intake
    wakes the loop, the loop's marks say what is pending); the loop's steps (batches,
    single entries, passage lane, idle flush, generation switch) are small methods.
    """

    def __init__(
        self,
        store: SqliteStore,
        service: IngestService,
        clock: Callable[[], str],
        idle_flush_seconds: float,
        monotonic: Callable[[], float] = time.monotonic,
        derived: Any = None,
        policy: FailurePolicy | None = None,
        limits: EventLimits = NO_LIMITS,
        batch_entries: int = 256,
        batch_max_ms: float = 250.0,
        read_ahead: int = 200_000,
        two_speeds: bool = False,
    ) -> None:
        self.store = store  # the event log (truth) and the intake counters
        self.service = service
        self.derived: Any = derived if derived is not None else store  # current generation
        self.read_ahead = read_ahead  # log entries the fair scheduler looks ahead at most
        self._sched = self._schedule()
        self._lock = threading.RLock()  # held while applying a batch or switching generation
        self.clock = clock
        self.idle_flush_seconds = idle_flush_seconds
        self.monotonic = monotonic
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.idle = IdleTracker(idle_flush_seconds, monotonic)
        self._errors = 0
        self.policy = policy or FailurePolicy()
        self.retrying = Retrying(self.policy)  # the one failure policy step, per position
        self.limits = limits  # intake limits (settings limit_*), checked before the log
        self.batch_entries = max(1, batch_entries)  # settings derive_batch_entries
        self.batch_max_ms = batch_max_ms  # settings derive_batch_max_ms
        self._single: list[Entry] = []  # a failed batch's entries, now one at a time
        self._intake = _Gauge()  # submits waiting for the store: a batch then ends early
        self._freshness = Freshness()
        self.two_speeds = two_speeds  # settings derive_two_speeds: passage vectors after
        self._lane = self._attach_lane()
        self._lane_at = monotonic()  # when the passage lane last had a slice

    @property
    def max_attempts(self) -> int:
        """Failures of one entry (not transient) before it is dead-lettered."""
        return self.policy.max_attempts

    # ------------------------------------------------------------------ gateway
    def submit(self, items: Sequence[Any], source: str = "http") -> SubmitResult:
        """Validate and durably append a batch; invalid items go to the dead letters."""
        checked = check_batch(items, self.clock(), source, self.limits)
        with self._intake, self.store.transaction():
            # issue 26: a forgotten scope's events are refused (checked under the store's
            # lock, so a concurrent forget either sees them in the log or refuses them)
            checked = drop_erased(self.store.tombstones, checked, len(items))
            rows = [(event.user_id, event.event_id, event.thread_key, raw.decode())
                    for event, raw in checked.valid]
            appended = self.store.log.append_log(rows) if rows else []
            for letter in checked.letters:
                self.store.dead_letters.put_dead_letter(letter)
            accepted = sum(appended)
            self.store.counters.incr("events_received", len(items))
            self.store.counters.incr("events_accepted", accepted)
            self.store.counters.incr("duplicates", len(appended) - accepted)
        self._wake.set()
        return SubmitResult(accepted, len(appended) - accepted, checked.rejected)

    def request_flush(self, user_id: str, thread_id: str, reason: str = "flush") -> None:
        """Append a flush marker for one thread (end of an ingest, idle timeout)."""
        marker = FlushMarker(user_id, thread_id, self.clock(), reason)
        key = thread_key(user_id, thread_id)
        with self._intake, self.store.transaction():
            self.store.log.append_log([(None, None, key, orjson.dumps(marker.to_dict()).decode())])
        self._wake.set()

    def pending(self) -> int:
        """Accepted events not yet in a memory: unapplied log + open windows."""
        return self.unprocessed() + int(self.derived.states.count_pending_window_events())

    def unprocessed(self) -> int:
        """Log entries the current generation has not applied yet (read ahead + beyond),
        plus memories whose passage vectors are still due (two speeds)."""
        sched = self._sched
        scanned = sched.scanned  # read before ``pending``: a concurrent scan only adds
        return (sched.pending + int(self.store.log.count_log_after(scanned))
                + self.passages_pending())

    def thread_pending(self, user_id: str, thread_id: str) -> dict[str, int]:
        """One thread's backlog: ``unprocessed`` log entries (events and flush markers) not
        applied yet, and ``pending`` = those plus its events waiting in an open window
        (``GET /v1/threads/{id}/pending``: what ``breadcrumb import`` waits for)."""
        key = thread_key(user_id, thread_id)
        sched = self._sched
        scanned = sched.scanned  # read before the queue: a concurrent scan only adds
        queue = sched.queues.get(key)
        queued = len(queue) if queue is not None else 0
        unprocessed = queued + int(self.store.log.count_log_after(scanned, key))
        state = self.derived.states.get_state(key) or {}
        return {"unprocessed": unprocessed,
                "pending": unprocessed + len(state.get("pending") or ())}

    def passages_pending(self) -> int:
        """Memories written whose chunks' vectors are not yet (``/v1/stats``)."""
        lane = self._lane
        return lane.pending if lane is not None else 0

    def _attach_lane(self) -> PassageLane | None:
        """A passage lane for the current generation (resuming a crashed one's); each unit
        of work hands it its chunks (``UnitOfWork.lane``)."""
        if not self.two_speeds:
            return None
        lane = PassageLane(self.derived.counters, self.service)
        lane.recover()
        return lane

    def _passages(self, log_busy: bool) -> int:
        """A slice of the passage lane when the log is idle, or once a second under load
        (memories first, the passages still follow)."""
        lane = self._lane
        if lane is None or not lane.pending:
            return 0
        now = self.monotonic()
        if log_busy and now - self._lane_at < 1.0:
            return 0
        self._lane_at = now
        return lane.work()

    def _schedule(self) -> FairSchedule:
        """The schedule of the current generation, from its marks (crash-exact resume)."""
        counters = self.derived.counters.get_counters()
        low = int(counters.get(CURSOR, 0))
        if CURSOR not in counters and self.derived is self.store:  # from before cursors
            low = int(self.store.log.max_processed_seq())
        sched = FairSchedule(low, thread_marks(counters), self.read_ahead)
        sched.scan(self.store.log)
        return sched

    def use_generation(self, derived: Any, service: IngestService) -> None:
        """Switch to another generation between two entries (the replay's last step)."""
        with self._lock:
            self.derived = derived
            if self._lane is not None:  # the old generation's passages first
                while self._lane.work():
                    pass
            self.service = service
            self._sched = self._schedule()
            self._single = []
            self._lane = self._attach_lane()
        self._wake.set()

    def paused(self) -> threading.RLock:
        """Hold this to keep the processor between entries (``with runner.paused():``)."""
        return self._lock

    def wait_processed(self, timeout: float) -> None:
        """Drain in this thread when the processor is not running, else wait for it."""
        deadline = self.monotonic() + timeout
        if self._thread is None:
            self.drain(timeout)
        while self.unprocessed() > 0:
            if self.monotonic() > deadline:
                left = self.unprocessed()
                raise TimeoutError(f"{left} log entries unprocessed after {timeout} s")
            time.sleep(0.05)

    def freshness(self) -> dict[str, Any]:
        """Accepted → recallable and accepted → memory, p50 / p95 in ms (``/v1/stats``)."""
        return self._freshness.summary()

    def counters(self) -> dict[str, int]:
        values = dict(self.store.counters.get_counters())
        if self.derived is not self.store:
            derived = self.derived.counters.get_counters()
            intake_letters = values.get("dead_lettered", 0)  # refused at the gateway
            for name in ("events_processed", *RELIABILITY_COUNTERS):
                values[name] = derived.get(name, 0)
            # as ``count_dead_letters`` counts them: the log's letters plus the generation's
            values["dead_lettered"] = intake_letters + derived.get("dead_lettered", 0)
        values["processor_errors"] = self._errors
        return values

    # ------------------------------------------------------------------ processing
    def process_available(self, limit: int | None = None) -> int:
        """Apply up to ``limit`` (default ``batch_entries``) log entries picked fairly
        (:class:`~breadcrumb.streams.embedded.fair_schedule.FairSchedule`: round-robin by tenant,
        each thread's entries in log order); returns how many were handled.

        They go as one unit of work (``streams.ingest_core``). A unit that fails is rolled
        back and its entries are then taken one at a time under the failure policy
        (:class:`~breadcrumb.streams.ingest_core.Retrying`): a transient error (or a
        permanent one before ``max_attempts``) raises, leaving the entry unapplied for the
        next call (after ``retry_delay``); a permanent one then becomes a dead letter keyed
        by its log position and the log moves on."""
        with self._lock:
            if self._single:
                return self._apply_singly()
            self._sched.scan(self.store.log)
            picked = self._sched.pick(limit or self.batch_entries)
            if not picked:
                return self._passages(log_busy=False)
            payloads = self.store.log.read_log_entries([seq for seq, _key in picked])
            entries = [(seq, key, payloads[seq]) for seq, key in picked]
            if len(entries) > 1:
                handled = self._apply_batch(entries)
                if handled:
                    return handled + self._passages(log_busy=True)
            self._single = entries
            return self._apply_singly()

    def _unit(self, picked: Sequence[tuple[int, str]], written: list[Marks]) -> UnitOfWork:
        """A unit of work on the current generation whose cursor writes the fair
        schedule's marks for the applied entries of ``picked`` (kept in ``written``)."""

        def mark(items: Sequence[Item]) -> None:  # inside the unit's transaction
            marks = self._sched.marks_for(picked[:len(items)])
            marks.write(self.derived.counters)
            written.append(marks)
            if self.derived is self.store:  # the log's flags commit with the batch
                self.store.log.mark_processed_many([seq for seq, _key in picked[:len(items)]])

        return log_unit(self.derived, self.service, mark, self._lane)

    def _apply_batch(self, entries: list[Entry]) -> int:
        deadline = self.monotonic() + self.batch_max_ms / 1000.0

        def enough() -> bool:  # intake first: an accepted event's 202 never waits a batch
            return self._intake.count > 0 or self.monotonic() >= deadline

        items = log_items([(seq, payload) for seq, _key, payload in entries])
        picked = [(seq, key) for seq, key, _payload in entries]
        written: list[Marks] = []
        unit = self._unit(picked, written)
        rehearsed, prepared = rehearse(unit, self.service, items, enough)
        try:  # a rehearsal's vectors ready: the same entries, the store lock for the writes
            result = unit.apply(items[:rehearsed] if rehearsed else items,
                                enough=None if rehearsed else enough, prepared=prepared)
        except Exception as exc:  # redo these entries one by one under the failure policy
            self._discard()
            log.warning("batch of %s log entries after %s failed (%s); one at a time",
                        len(entries), self._sched.low, describe(exc))
            return 0
        handled = len(result.results)
        self._done(entries[:handled], written[-1], result.results,
                   flagged=self.derived is self.store)
        return handled

    def _apply_singly(self) -> int:
        handled = 0
        while self._single:
            seq, key, payload = self._single[0]
            item, = log_items([(seq, payload)])
            written: list[Marks] = []
            unit = self._unit([(seq, key)], written)
            try:
                result = self.retrying.attempt(item.position, partial(unit.apply_one, item),
                                               partial(unit.give_up, item))
            except Exception:  # retried on a later call, after retry_delay
                self._discard()
                raise
            self._single.pop(0)
            outcome = result.results[0]
            self._done([(seq, key, payload)], written[-1],
                       [None if outcome.outcome == "dead_lettered" else outcome])
            handled += 1
        return handled

    def _done(self, done: Sequence[Entry], marks: Marks,
              results: Sequence[HandleResult | None], flagged: bool = False) -> None:
        """The entries' transaction committed: out of the schedule, flagged in the log
        (unless ``flagged`` in that transaction), their freshness (accepted → recallable;
        → memory for those closing a range)."""
        accepted = self._sched.commit([(seq, key) for seq, key, _payload in done], marks)
        if self._lane is not None:
            self._lane.committed()
        now = time.time()
        self._freshness.record(
            (now - at for at in accepted if at is not None),
            (now - at for at, result in zip(accepted, results, strict=False)
             if at is not None and result is not None and result.observations))
        if not flagged:
            self.store.log.mark_processed_many([seq for seq, _key, _payload in done])
        for _seq, _key, payload in done:
            self._touch(orjson.loads(payload))

    def _discard(self) -> None:
        if self._lane is not None:
            self._lane.discard()

    @property
    def retry_delay(self) -> float:
        """How long the loop waits before retrying the entry that failed last."""
        return self.retrying.delay

    def drain(self, timeout: float = 600.0) -> None:
        """Process until the log is empty (used by ``breadcrumb ingest`` in-process)."""
        deadline = self.monotonic() + timeout
        while self.process_available() and self.monotonic() < deadline:
            pass

    def flush_idle(self) -> int:
        """Append flush markers for threads idle longer than the timeout."""
        idle = self.idle.due()
        for key in idle:
            user_id, thread_id = split_thread_key(key)
            self.request_flush(user_id, thread_id, "idle")
        return len(idle)

    # ------------------------------------------------------------------ thread
    def start(self) -> None:
        """Start the background processor (resumes at the first unprocessed entry)."""
        for key, _state in self.derived.states.list_states(pending_only=True):
            self.idle.adopt(key)
        self._thread = threading.Thread(target=self._loop, name="breadcrumb-processor", daemon=True)
        self._thread.start()

    def running(self) -> bool:
        """Whether the background processor thread is alive (``/readyz``)."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                busy = self.process_available()
                self.flush_idle()
            except Exception:  # keep the loop alive, but loudly: the entry stays unprocessed
                self._errors += 1
                log.exception("processing failed; retrying in %.1f s", self.retry_delay)
                busy = 0
                self._stop.wait(self.retry_delay)
            if not busy:
                self._flush_index()
                self._wake.wait(0.2)
                self._wake.clear()

    def _flush_index(self) -> None:
        """Idle: persist the vector shards written a while ago (writes themselves do not
        flush; their WAL already makes them survive a crash)."""
        index = self.service.index
        if not isinstance(index, DeferredFlush):
            return
        try:
            with self._lock:  # between batches: a flush never splits one
                index.flush_due()
        except Exception:  # the next idle tick tries again; the WAL keeps the writes
            log.exception("vector index flush failed")

    def _touch(self, entry: dict[str, Any]) -> None:
        if not isinstance(entry.get("user_id"), str):
            return  # rejected: no thread to flush
        self.idle.touch(thread_key(str(entry.get("user_id")), str(entry.get("thread_id"))), entry)


class _Gauge:
    """How many threads are inside ``with gauge:`` right now."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self.count += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.count -= 1

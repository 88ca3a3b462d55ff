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
entries, and a replayed generation can take over at a precise log position. The loop
itself (read a batch, apply, commit, acknowledge) is
:class:`~breadcrumb.streams.embedded.live.LiveLoop`: if a batch fails it is rolled back
and its entries are applied one at a time under the failure policy, so a bad entry is
retried or dead-lettered without losing the others. Intake (:meth:`EmbeddedRunner.submit`)
validates each event with the intake limits and refuses erased scopes before the log.
Idle threads get a flush marker appended to the same log, so a replay reproduces every cut.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from breadcrumb.processors.validate import NO_LIMITS, EventLimits
from breadcrumb.stores.ports import DeferredFlush
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.streams.embedded.fair_schedule import CURSOR, FairSchedule, thread_marks
from breadcrumb.streams.embedded.live import Gauge, LiveLoop
from breadcrumb.streams.erased import drop_erased
from breadcrumb.streams.failure_policy import FailurePolicy
from breadcrumb.streams.freshness import Freshness
from breadcrumb.streams.gateway import SubmitResult, check_batch
from breadcrumb.streams.ingest_core import Retrying
from breadcrumb.streams.passage_lane import PassageLane
from breadcrumb.streams.service import IngestService
from breadcrumb.streams.tracking import RELIABILITY_COUNTERS, IdleTracker
from breadcrumb.topics.records import FlushMarker, split_thread_key, thread_key

log = logging.getLogger(__name__)


class EmbeddedRunner:
    """Gateway + processor loop for the embedded default.

    Why so many methods: it is the Gateway port (submit, request_flush, pending,
    unprocessed, wait_processed, counters, freshness) and the processor loop in one
    object, because both share the log store, its lock and the fair schedule (intake
    wakes the loop, the loop's marks say what is pending); the loop's turn itself is
    :class:`~breadcrumb.streams.embedded.live.LiveLoop`, one per generation.
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
        self._intake = Gauge()  # submits waiting for the store: a batch then ends early
        self._freshness = Freshness()
        self.two_speeds = two_speeds  # settings derive_two_speeds: passage vectors after
        self._live = self._live_loop()

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
        sched = self._live.sched
        scanned = sched.scanned  # read before ``pending``: a concurrent scan only adds
        return (sched.pending + int(self.store.log.count_log_after(scanned))
                + self.passages_pending())

    def thread_pending(self, user_id: str, thread_id: str) -> dict[str, int]:
        """One thread's backlog: ``unprocessed`` log entries (events and flush markers) not
        applied yet, and ``pending`` = those plus its events waiting in an open window
        (``GET /v1/threads/{id}/pending``: what ``breadcrumb import`` waits for)."""
        key = thread_key(user_id, thread_id)
        sched = self._live.sched
        scanned = sched.scanned  # read before the queue: a concurrent scan only adds
        queue = sched.queues.get(key)
        queued = len(queue) if queue is not None else 0
        unprocessed = queued + int(self.store.log.count_log_after(scanned, key))
        state = self.derived.states.get_state(key) or {}
        return {"unprocessed": unprocessed,
                "pending": unprocessed + len(state.get("pending") or ())}

    def passages_pending(self) -> int:
        """Memories written whose chunks' vectors are not yet (``/v1/stats``)."""
        lane = self._live.lane
        return lane.pending if lane is not None else 0

    def _live_loop(self) -> LiveLoop:
        """The live loop over the current generation: its schedule from its marks
        (crash-exact resume) and, with two speeds, a passage lane (resuming a crashed
        one's) that each unit of work hands its chunks (``UnitOfWork.lane``)."""
        lane = None
        if self.two_speeds:
            lane = PassageLane(self.derived.counters, self.service)
            lane.recover()
        return LiveLoop(self.store, self.derived, self.service, self._schedule(), lane,
                        self.retrying, self._intake, self._freshness, self.idle,
                        self.monotonic, self.batch_max_ms)

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
            lane = self._live.lane
            if lane is not None:  # the old generation's passages first
                while lane.work():
                    pass
            self.derived, self.service = derived, service
            self._live = self._live_loop()
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
        """One turn of the live loop (:meth:`LiveLoop.step
        <breadcrumb.streams.embedded.live.LiveLoop.step>`: read up to ``limit``, default
        ``batch_entries``, log entries picked fairly; apply them as one unit of the ingest
        core; commit; acknowledge); returns how many were handled. A failed batch's
        entries are then applied one at a time under the failure policy: a transient error
        (or a permanent one before ``max_attempts``) raises, leaving the entry unapplied for
        the next call (after ``retry_delay``); a permanent one then becomes a dead letter
        keyed by its log position and the log moves on."""
        with self._lock:
            return self._live.step(limit or self.batch_entries)

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

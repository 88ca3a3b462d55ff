"""The embedded driver: a durable SQLite log drained in order by one background thread.

``submit`` appends accepted events to the log in one transaction (durable before the
HTTP 202). The processing thread applies the log in micro-batches (up to ``batch_entries`` entries,
closing a batch once ``batch_max_ms`` of work is spent) to the current *generation* of
derived stores (see ``stores.generations``): one transaction per batch that also advances
that generation's cursor into the log, one embedding call for the texts of every range the
batch closes (across threads) and one vector upsert; each thread's entries keep their log
order. If a batch fails it is rolled back and its entries are applied one at a time under
the failure policy, so a bad entry is retried or dead-lettered without losing the others.
The cursor moving with the writes means a crash or restart resumes exactly at the first
unapplied entry, and a replayed generation can take over at a precise log position.
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
from breadcrumb.stores.sqlite_store import SqliteStore
from breadcrumb.streams.failure_policy import Attempts, FailurePolicy
from breadcrumb.streams.gateway import SubmitResult, check_batch
from breadcrumb.streams.replay import applied_seq, apply_batch, apply_entry, dead_letter_entry
from breadcrumb.streams.service import IngestService
from breadcrumb.streams.tracking import RELIABILITY_COUNTERS, IdleTracker
from breadcrumb.topics.records import FlushMarker, split_thread_key, thread_key

log = logging.getLogger(__name__)


class EmbeddedRunner:
    """Gateway + processor loop for the embedded default."""

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
    ) -> None:
        self.store = store  # the event log (truth) and the intake counters
        self.service = service
        self.derived: Any = derived if derived is not None else store  # current generation
        self._cursor = self._initial_cursor()
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
        self._attempts = Attempts()
        self._retry_delay = self.policy.base_delay
        self.limits = limits  # intake limits (settings limit_*), checked before the log
        self.batch_entries = max(1, batch_entries)  # settings derive_batch_entries
        self.batch_max_ms = batch_max_ms  # settings derive_batch_max_ms
        self._single_until = 0  # entries up to this position go one at a time (a failed batch)
        self._intake = _Gauge()  # submits waiting for the store: a batch then ends early

    @property
    def max_attempts(self) -> int:
        """Failures of one entry (not transient) before it is dead-lettered."""
        return self.policy.max_attempts

    # ------------------------------------------------------------------ gateway
    def submit(self, items: Sequence[Any], source: str = "http") -> SubmitResult:
        """Validate and durably append a batch; invalid items go to the dead letters."""
        checked = check_batch(items, self.clock(), source, self.limits)
        rows = [
            (event.user_id, event.event_id, event.thread_key, raw.decode())
            for event, raw in checked.valid
        ]
        with self._intake, self.store.transaction():
            appended = self.store.append_log(rows) if rows else []
            for letter in checked.letters:
                self.store.put_dead_letter(letter)
            accepted = sum(appended)
            self.store.incr("events_received", len(items))
            self.store.incr("events_accepted", accepted)
            self.store.incr("duplicates", len(appended) - accepted)
        self._wake.set()
        return SubmitResult(accepted, len(appended) - accepted, checked.rejected)

    def request_flush(self, user_id: str, thread_id: str, reason: str = "flush") -> None:
        """Append a flush marker for one thread (end of an ingest, idle timeout)."""
        marker = FlushMarker(user_id, thread_id, self.clock(), reason)
        key = thread_key(user_id, thread_id)
        with self._intake, self.store.transaction():
            self.store.append_log([(None, None, key, orjson.dumps(marker.to_dict()).decode())])
        self._wake.set()

    def pending(self) -> int:
        """Accepted events not yet in a memory: unapplied log + open windows."""
        return self.unprocessed() + int(self.derived.count_pending_window_events())

    def unprocessed(self) -> int:
        """Log entries the current generation has not applied yet."""
        return int(self.store.count_log_after(self._cursor))

    def _initial_cursor(self) -> int:
        cursor = applied_seq(self.derived)
        if cursor == 0 and self.derived is self.store:  # a data dir from before cursors
            cursor = int(self.store.max_processed_seq())
        return cursor

    def use_generation(self, derived: Any, service: IngestService) -> None:
        """Switch to another generation between two entries (the replay's last step)."""
        with self._lock:
            self.derived = derived
            self.service = service
            self._cursor = applied_seq(derived)
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

    def counters(self) -> dict[str, int]:
        values = dict(self.store.get_counters())
        if self.derived is not self.store:
            derived = self.derived.get_counters()
            for name in ("events_processed", *RELIABILITY_COUNTERS):
                values[name] = derived.get(name, 0)
        values["processor_errors"] = self._errors
        return values

    # ------------------------------------------------------------------ processing
    def process_available(self, limit: int | None = None) -> int:
        """Apply up to ``limit`` (default ``batch_entries``) log entries in order; returns
        how many were handled.

        They go as one batch (:func:`~breadcrumb.streams.replay.apply_batch`) when the
        service can batch. A batch that fails is rolled back and its entries are then taken
        one at a time: a failing entry goes through the failure policy — a transient error
        (or a permanent one before ``max_attempts``) raises, leaving the entry unapplied for
        the next call (after ``retry_delay``); a permanent one then becomes a dead letter
        keyed by its log position and the log moves on."""
        with self._lock:
            entries = self.store.read_log_all(self._cursor, limit or self.batch_entries)
            if not entries:
                return 0
            if entries[0][0] > self._single_until:
                if not self._can_batch(entries):
                    return self._apply_singly(entries)
                handled = self._apply_batch(entries)
                if handled:
                    return handled
            return self._apply_singly([e for e in entries if e[0] <= self._single_until])

    def _can_batch(self, entries: Sequence[tuple[int, str]]) -> bool:
        return len(entries) > 1 and callable(getattr(self.service, "batched", None))

    def _apply_batch(self, entries: list[tuple[int, str]]) -> int:
        deadline = self.monotonic() + self.batch_max_ms / 1000.0

        def enough() -> bool:  # intake first: an accepted event's 202 never waits a batch
            return self._intake.count > 0 or self.monotonic() >= deadline

        try:
            handled = apply_batch(self.derived, self.service, entries, enough)
        except Exception as exc:  # redo these entries one by one under the failure policy
            log.warning("batch of %s log entries after %s failed (%r); one at a time",
                        len(entries), self._cursor, exc)
            self._single_until = entries[-1][0]
            return 0
        done = entries[:handled]
        with self.store.transaction():
            for seq, _payload in done:
                self.store.mark_processed(seq)
        self._cursor = done[-1][0]
        for _seq, payload in done:
            self._touch(orjson.loads(payload))
        return handled

    def _apply_singly(self, entries: list[tuple[int, str]]) -> int:
        handled = 0
        for seq, payload in entries:
            retries = self._attempts.counts.get(seq, 0)
            try:
                apply_entry(self.derived, self.service, seq, payload, retries)
            except Exception as exc:
                decision = self.policy.decide(exc, self._attempts.failed(seq))
                if decision.retry:
                    self._retry_delay = decision.delay
                    raise
                dead_letter_entry(self.derived, seq, payload, decision.reason,
                                  self._attempts.counts[seq], self.clock())
            self.store.mark_processed(seq)
            self._cursor = seq
            self._attempts.done(seq)
            self._touch(orjson.loads(payload))
            handled += 1
        return handled

    @property
    def retry_delay(self) -> float:
        """How long the loop waits before retrying the entry that failed last."""
        return self._retry_delay

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
        for key, _state in self.derived.list_states(pending_only=True):
            self.idle.adopt(key)
        self._thread = threading.Thread(target=self._loop, name="breadcrumb-processor", daemon=True)
        self._thread.start()

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
                log.exception("processing failed; retrying in %.1f s", self._retry_delay)
                busy = 0
                self._stop.wait(self._retry_delay)
            if not busy:
                self._wake.wait(0.2)
                self._wake.clear()

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

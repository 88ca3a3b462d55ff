"""Applying the embedded event log to a generation, and rebuilding a new generation by replay.

Each generation keeps its own cursor into the log (the ``applied_seq`` counter in its
derived store), written in the same transaction as the derived rows, so a crash resumes
at the right entry and a replayed generation can catch up with the live log before the
alias is switched to it.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from breadcrumb.streams.failure_policy import FailurePolicy, log_position
from breadcrumb.streams.service import HandleResult, IngestService
from breadcrumb.streams.tracking import count_dead_letter, count_outcome, count_outcomes
from breadcrumb.topics.records import DeadLetter

log = logging.getLogger(__name__)
CURSOR = "applied_seq"


def applied_seq(derived: Any) -> int:
    """The last log position this generation has applied."""
    return int(derived.get_counters().get(CURSOR, 0))


def apply_entry(derived: Any, service: IngestService, seq: int, payload: str,
                retries: int = 0, mark: Callable[[], None] | None = None) -> HandleResult:
    """Apply one log entry to a generation and advance its cursor, atomically (``mark``
    writes the cursor instead when given: the fair runner's per-thread marks)."""
    with derived.transaction():
        result = service.handle(orjson.loads(payload), payload)
        _mark(derived, seq, mark)
        count_outcome(derived, result.outcome, retries)
    return result


def apply_batch(derived: Any, service: IngestService, entries: Sequence[tuple[int, str]],
                enough: Callable[[], bool] | None = None,
                mark: Callable[[int], None] | None = None,
                results: list[HandleResult] | None = None) -> int:
    """Apply log entries in order as ONE transaction: one commit, one embedding call and
    one vector upsert (``IngestService.batched``), the cursor moved to the last applied
    entry with them. ``enough`` is asked after each entry and ends the batch early when it
    says so (at least one entry is applied). Returns how many entries were applied; an
    exception rolls all of them back (the caller then goes one entry at a time). ``mark``,
    when given, writes the cursor instead, told how many entries were applied; ``results``
    collects each applied entry's :class:`HandleResult`."""
    applied = 0
    outcomes: Counter[str] = Counter()
    decoded = [orjson.loads(payload) for _seq, payload in entries]
    with derived.transaction(), service.batched(_event_ids(decoded)):
        for (_seq, payload), entry in zip(entries, decoded, strict=True):
            result = service.handle(entry, payload)
            outcomes[result.outcome] += 1
            if results is not None:
                results.append(result)
            applied += 1
            if enough is not None and enough():
                break
        count_outcomes(derived, outcomes)  # one counter write per outcome, not per entry
        if applied and mark is not None:
            mark(applied)
        elif applied:
            derived.set_counter(CURSOR, entries[applied - 1][0])
    return applied


def _event_ids(entries: Sequence[Any]) -> list[tuple[str, str]]:
    """The ``(user_id, event_id)`` pairs of the decoded entries that carry both."""
    return [(e["user_id"], e["event_id"]) for e in entries
            if isinstance(e, dict) and isinstance(e.get("user_id"), str)
            and isinstance(e.get("event_id"), str)]


def dead_letter_entry(derived: Any, seq: int, payload: str, reason: str, attempts: int,
                      received_at: str, mark: Callable[[], None] | None = None) -> None:
    """Give up on one log entry: a dead letter keyed by its position, the cursor past it."""
    position = log_position(seq)
    log.error("giving up on log entry %s: %s", seq, reason)
    letter = DeadLetter(reason=f"{reason} (at {position})", payload=payload,
                        received_at=received_at, source="processor")
    with derived.transaction():
        derived.put_dead_letter(letter, key=position)
        _mark(derived, seq, mark)
        count_dead_letter(derived, attempts - 1)


def _mark(derived: Any, seq: int, mark: Callable[[], None] | None) -> None:
    if mark is None:
        derived.set_counter(CURSOR, seq)
    else:
        mark()


def apply_with_policy(derived: Any, service: IngestService, seq: int, payload: str,
                      policy: FailurePolicy,
                      sleep: Callable[[float], None] = time.sleep) -> HandleResult | None:
    """Apply one entry under the failure policy: transient errors retried until the store
    is back, others dead-lettered after ``policy.max_attempts`` (then None)."""
    attempts = 0
    while True:
        try:
            return apply_entry(derived, service, seq, payload, attempts)
        except Exception as exc:
            attempts += 1
            decision = policy.decide(exc, attempts)
            if decision.retry:
                log.warning("log entry %s failed (attempt %s); retrying in %.1f s: %s", seq,
                            attempts, decision.delay, decision.reason)
                sleep(decision.delay)
                continue
            dead_letter_entry(derived, seq, payload, decision.reason, attempts, service.clock())
            return None


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

    def __init__(self, log: Any, derived: Any, service: IngestService, progress: Progress,
                 on_progress: Callable[[Progress], None] | None = None,
                 batch: int = 256, policy: FailurePolicy | None = None) -> None:
        self.log = log
        self.policy = policy or FailurePolicy()
        self.derived = derived
        self.service = service
        self.progress = progress
        self.on_progress = on_progress
        self.batch = batch

    def catch_up(self) -> int:
        """Apply everything the log holds now; returns how many entries were applied."""
        applied = 0
        cursor = applied_seq(self.derived)
        self.progress.total = self.progress.applied + self.log.count_log_after(cursor)
        while True:
            entries = self.log.read_log_all(cursor, self.batch)
            if not entries:
                return applied
            try:  # one commit, one embedding call, one vector upsert per batch
                apply_batch(self.derived, self.service, entries)
            except Exception as exc:  # never stop for one bad entry: redo this batch one
                log.warning("replay batch after %s failed (%r); entry by entry", cursor, exc)
                for seq, payload in entries:  # entry at a time under the failure policy
                    apply_with_policy(self.derived, self.service, seq, payload, self.policy)
            cursor = entries[-1][0]
            applied += len(entries)
            self.progress.applied += len(entries)
            if self.on_progress is not None:
                self.on_progress(self.progress)

    def remaining(self) -> int:
        return int(self.log.count_log_after(applied_seq(self.derived)))

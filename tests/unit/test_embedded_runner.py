"""The embedded runner's log discipline: order, dedupe, and poison entries as data."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.streams.embedded.runner import EmbeddedRunner
from breadcrumb.streams.service import HandleResult
from breadcrumb.topics.records import DeadLetter, Event
from tests.conftest import example_events

NOW = "2026-11-30T00:00:00+00:00"


class _RecordingService:
    """Stands in for IngestService: records entries, fails on one event id."""

    def __init__(self, poison: str | None = None) -> None:
        self.poison = poison
        self.seen: list[str] = []

    def batched(self, context: Any = None) -> contextlib.AbstractContextManager[None]:
        self.letters = context.letters  # where the unit of work keeps its dead letters
        return contextlib.nullcontext(self)  # the block of work: this recorder

    def embeds_slowly(self) -> bool:
        return False

    def reject(self, reason: str, fld: str | None, raw_text: str | None,
               entry: Any = None, source: str | None = None) -> HandleResult:
        self.letters.put_dead_letter(DeadLetter(reason, raw_text or "", NOW, fld,
                                                source or "log"))
        return HandleResult("rejected", reason=reason)

    def handle(self, entry: Event | dict[str, Any], raw_text: str | None = None
               ) -> HandleResult:
        if _id(entry) == self.poison:
            raise RuntimeError("boom")
        self.seen.append(_id(entry))
        return HandleResult("processed")


def _id(entry: Event | dict[str, Any]) -> str:
    """A decoded entry's event id (``_control`` for a flush marker)."""
    return entry.event_id if isinstance(entry, Event) else str(entry.get("_control"))


def _runner(tmp_path: Path, service: _RecordingService) -> EmbeddedRunner:
    store = SqliteStore(tmp_path / "s.sqlite3")
    store.open()
    return EmbeddedRunner(store, service, lambda: "2026-11-30T00:00:00+00:00", 60.0)  # type: ignore[arg-type]


def test_entries_are_processed_in_log_order_and_duplicates_skipped(tmp_path: Path) -> None:
    service = _RecordingService()
    runner = _runner(tmp_path, service)
    events = example_events()[:6]
    first = runner.submit(events)
    again = runner.submit(events[:3])
    assert (first.accepted, first.duplicates, again.accepted, again.duplicates) == (6, 0, 0, 3)
    runner.drain()
    assert service.seen == [e["event_id"] for e in events]
    assert runner.unprocessed() == 0
    assert runner.counters()["events_processed"] == 6


def test_a_poison_entry_becomes_a_dead_letter_and_the_log_moves_on(tmp_path: Path) -> None:
    events = example_events()[:4]
    service = _RecordingService(poison=events[1]["event_id"])
    runner = _runner(tmp_path, service)
    runner.submit(events)
    for _ in range(runner.max_attempts - 1):
        try:
            runner.process_available()
        except RuntimeError:
            pass
        assert runner.store.dead_letters.count_dead_letters() == 0
    runner.process_available()
    runner.drain()
    assert runner.store.dead_letters.count_dead_letters() == 1
    letter = runner.store.dead_letters.list_dead_letters(1)[0]
    assert "boom" in letter.reason and events[1]["event_id"] in letter.payload
    # the batch of four failed and rolled back (it had seen the first), then one at a time
    assert service.seen[-3:] == [events[0]["event_id"], events[2]["event_id"],
                                 events[3]["event_id"]]
    assert runner.unprocessed() == 0
    counters = runner.counters()
    assert (counters["events_processed"], counters["dead_lettered"]) == (3, 1)
    assert counters["processing_failures"] == 1 and counters["retries"] == 2


class _FlakyService(_RecordingService):
    """Fails on one event with a transient error ``times`` times, then works."""

    def __init__(self, event_id: str, times: int) -> None:
        super().__init__()
        self.event_id, self.times = event_id, times

    def handle(self, entry: Event | dict[str, Any], raw_text: str | None = None
               ) -> HandleResult:
        if _id(entry) == self.event_id and self.times:
            self.times -= 1
            raise sqlite3.OperationalError("database is locked")
        return super().handle(entry, raw_text)


def test_a_transient_error_is_retried_past_max_attempts_and_never_dead_lettered(
        tmp_path: Path) -> None:
    events = example_events()[:3]
    # once in the first batch (rolled back, then one at a time), then ten times alone
    service = _FlakyService(events[1]["event_id"], times=11)
    runner = _runner(tmp_path, service)
    runner.submit(events)
    delays = []
    for _ in range(10):
        with pytest.raises(sqlite3.OperationalError):
            runner.process_available()
        delays.append(runner.retry_delay)
    runner.drain()
    assert runner.store.dead_letters.count_dead_letters() == 0
    assert service.seen[1:] == [e["event_id"] for e in events]  # [0]: the failed batch's
    assert delays[0] < delays[3] and max(delays) == runner.policy.max_delay  # capped backoff
    assert runner.counters()["retries"] == 10


class _BatchingService(_RecordingService):
    """A recording service that can batch (no deferred work of its own); ``on_entry``
    runs after each handled entry."""

    def __init__(self) -> None:
        super().__init__()
        self.on_entry: Any = None


    def handle(self, entry: Event | dict[str, Any], raw_text: str | None = None
               ) -> HandleResult:
        result = super().handle(entry, raw_text)
        if self.on_entry is not None:
            self.on_entry(len(self.seen))
        return result


def test_a_waiting_submit_ends_the_batch_at_the_next_entry(tmp_path: Path) -> None:
    service = _BatchingService()
    runner = _runner(tmp_path, service)
    events = example_events()[:8]
    runner.submit(events)

    def submit_arrives(seen: int) -> None:
        if seen == 3:
            runner._intake.__enter__()  # a submit now waits for the store

    service.on_entry = submit_arrives
    assert runner.process_available() == 3  # the batch ended; the cursor moved with it
    assert runner.unprocessed() == len(events) - 3
    runner._intake.__exit__()
    service.on_entry = None
    assert runner.process_available() == len(events) - 3  # the rest as one batch
    assert service.seen == [e["event_id"] for e in events]
    assert runner.counters()["events_processed"] == len(events)


def test_a_batch_ends_after_its_time_budget(tmp_path: Path) -> None:
    service = _BatchingService()
    store = SqliteStore(tmp_path / "s.sqlite3")
    store.open()
    now = [0.0]
    runner = EmbeddedRunner(store, service, lambda: "2026-11-30T00:00:00+00:00",  # type: ignore[arg-type]
                            60.0, monotonic=lambda: now[0], batch_max_ms=100.0)
    events = example_events()[:6]
    runner.submit(events)

    def slow(seen: int) -> None:
        now[0] += 0.04  # each entry takes 40 ms: the third crosses the 100 ms budget

    service.on_entry = slow
    assert runner.process_available() == 3
    assert runner.process_available() == 3
    assert runner.unprocessed() == 0

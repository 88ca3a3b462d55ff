"""What both runners (embedded and Faust) keep besides the stores: idle threads and counters.

:class:`IdleTracker` remembers when each thread last got an event so an idle one gets a
flush marker; a thread being handled right now is never idle (slow embeds take seconds).
:func:`count_outcome` names the counters an applied message moves, so both runners count
the same way: each event once (a redelivery of an applied event counts as ``redeliveries``,
not again as ``events_processed``), retries and dead letters visible in ``/v1/stats``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from breadcrumb.topics.records import FlushMarker

#: Counters the runners add to the store's counters (``/v1/stats``, ``/metrics``).
RELIABILITY_COUNTERS = ("processing_failures", "dead_lettered", "retries", "redeliveries",
                        "flushes")
_BY_OUTCOME = {"processed": "events_processed", "rejected": "events_processed",
               "duplicate": "redeliveries", "flushed": "flushes"}


def count_outcome(store: Any, outcome: str, retries: int = 0) -> None:
    """Move the counters for one applied message (call inside its transaction)."""
    store.incr(_BY_OUTCOME.get(outcome, "events_processed"), 1)
    if retries:
        store.incr("retries", retries)


def count_dead_letter(store: Any, retries: int) -> None:
    """Counters for a message given up on (call inside the dead letter's transaction)."""
    store.incr("processing_failures", 1)
    store.incr("dead_lettered", 1)
    if retries:
        store.incr("retries", retries)


def ends_window(entry: Any) -> bool:
    """A flush marker or a session end closes the thread's window: nothing left to flush."""
    return isinstance(entry, dict) and (FlushMarker.is_flush(entry)
                                        or entry.get("kind") == "session_end")


class IdleTracker:
    """Last activity per thread key (``user_id/thread_id``) on a monotonic clock."""

    def __init__(self, idle_seconds: float,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.idle_seconds = idle_seconds
        self.monotonic = monotonic
        self.last_seen: dict[str, float] = {}
        self.busy: set[str] = set()

    def touch(self, key: str, entry: Any) -> None:
        """After a message of ``key`` was handled."""
        if ends_window(entry):
            self.last_seen.pop(key, None)
        elif key:
            self.last_seen[key] = self.monotonic()

    def adopt(self, key: str) -> None:
        """An open window found after a restart: start its clock now (if not running)."""
        if key and key not in self.last_seen and key not in self.busy:
            self.last_seen[key] = self.monotonic()

    @contextmanager
    def handling(self, key: str) -> Iterator[None]:
        """While a message of ``key`` is being handled the thread is not idle."""
        self.busy.add(key)
        try:
            yield
        finally:
            self.busy.discard(key)

    def due(self) -> list[str]:
        """Keys idle for ``idle_seconds`` or more, forgotten as they are returned (the
        caller sends each a flush marker)."""
        now = self.monotonic()
        keys = [k for k, seen in self.last_seen.items()
                if now - seen >= self.idle_seconds and k not in self.busy]
        for key in keys:
            self.last_seen.pop(key, None)
        return keys

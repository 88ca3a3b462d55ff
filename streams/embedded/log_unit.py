"""The ingest core's unit of work over the embedded SQLite log, for every embedded driver.

The live loop (``streams.embedded.runner``), the replay of a new generation
(``streams.embedded.replay``) and the dead-letter redrive (``query_api.redrive``) each apply
log entries as units of the ingest core (``streams.ingest_core``) through :func:`log_unit`:
the generation's transaction and its cursor into the log (:class:`LogCursor`: the
``applied_seq`` counter, or the live loop's fair-schedule marks), moved in the same
transaction as the derived rows, so a crash resumes at the right entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

import orjson

from breadcrumb.stores.ports.tables import Store
from breadcrumb.streams.failure_policy import log_position
from breadcrumb.streams.ingest_core import Item, UnitOfWork, entry_item
from breadcrumb.streams.service import IngestService, PassageSink
from breadcrumb.streams.tracking import count_dead_letter, count_outcome

CURSOR = "applied_seq"


def applied_seq(derived: Store) -> int:
    """The last log position this generation has applied."""
    return int(derived.counters.get_counters().get(CURSOR, 0))


def log_items(entries: Sequence[tuple[int, str]]) -> list[Item]:
    """Embedded log entries ``(seq, payload)`` as ingest items, each decoded once (the log
    holds JSON only: the gateway wrote it)."""
    return [entry_item(log_position(seq), orjson.loads(payload), payload, seq=seq)
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
    """A unit of work on a generation's store: its transaction (rolled back when the unit
    is a rehearsal: ``keep`` False), the log cursor."""

    @contextmanager
    def scope(_items: Sequence[Item], _letters: Any, keep: bool) -> Iterator[IngestService]:
        with derived.transaction(keep):
            yield service

    return UnitOfWork(derived, scope, partial(LogCursor, derived, mark), lane=lane)

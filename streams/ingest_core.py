"""The ingest core: one unit of work under the one failure policy, for every driver.

Every driver — the embedded runner (``streams.embedded.runner``), the Faust agent and its batch
path (``streams.kafka.agent``, ``streams.kafka.batch``) and both replayers — hands its
entries to a :class:`UnitOfWork`, which applies them as ONE transaction:

* each entry was decoded once, when the driver made it an :class:`Item`
  (:func:`entry_item`): its value checked against the contract (:func:`decode_entry`:
  the :class:`~breadcrumb.topics.records.Event`, or the
  :class:`~breadcrumb.processors.validate.Rejection` saying why not) — a log holds only
  what intake accepted, but an old log or a producer writing straight to Kafka may hold
  more, and a refusal is data (a dead letter), never a crash;
* the unit checks its events against the erasures once, with one lookup
  (``Tombstones.erased_positions``): an erasure may come after intake, and a replay or a
  redelivery must not bring an erased scope back;
* the driver's ``scope`` opens the transaction and binds the ingest service to it (the
  embedded log's generation store; a Kafka batch's SQL store, thread states and raw
  events read at once);
* each entry is handled by one block of work of
  :class:`~breadcrumb.streams.service.IngestService`
  (:meth:`~breadcrumb.streams.service.IngestService.batched`: one embedding call, one
  vector upsert), or rejected; its dead letter is keyed by its position;
* the :class:`Cursor` counts each entry (once per position) and moves past the applied
  ones — the embedded log's marks, or the Kafka partitions' consumed-through marks — and
  the counters are written once, at the end, inside the transaction.

A rehearsal (:meth:`UnitOfWork.rehearse`, ``streams.rehearsal``) runs the same loop in a
transaction the scope rolls back (``keep=False``): the block writes nothing and returns
the texts it would embed.

When a unit fails, nothing of it is committed. The driver then applies its entries one
at a time under :class:`Retrying`, the one retry-then-dead-letter step: a transient error
is retried (with the policy's backoff) for as long as it takes; any other error is
retried ``max_attempts`` times and then the entry is given up on — its dead letter
written with the reason, the cursor moved past it — so one bad entry never stalls a
partition, the log or a replay.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import orjson

from breadcrumb.processors.validate import Rejection, validate_event
from breadcrumb.stores.ports.tables import Counters, KeyedDeadLetters, Store
from breadcrumb.streams.failure_policy import Attempts, FailurePolicy
from breadcrumb.streams.service import (
    BatchContext,
    HandleResult,
    IngestBlock,
    IngestService,
    PassageSink,
)
from breadcrumb.topics.records import DeadLetter, Event, FlushMarker, Observation

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Item:
    """One entry of a unit: where it sits, its value and the text its letter keeps."""

    position: str  # "log:<seq>" or "topic/partition/offset": its dead letter's key
    entry: Any  # the decoded value (an event mapping or a flush marker)
    text: str  # what its dead letter keeps (JSON text, or base64 of undecodable bytes)
    poison: str | None = None  # why it cannot be handled (decided before the unit)
    direct: bool = False  # published straight to Kafka (counted as received here)
    accepted: float | None = None  # epoch s it was accepted (Kafka timestamp): freshness
    seq: int | None = None  # its embedded log position
    key: str = ""  # the thread key it was published under (Kafka)
    #: the value checked once (:func:`decode_entry`): the event, why it is refused, or
    #: None (a flush marker, or poison)
    decoded: Event | Rejection | None = None

    @property
    def event_ids(self) -> tuple[str, str] | None:
        entry = self.entry
        if self.poison is None and isinstance(entry, dict) and isinstance(
                entry.get("user_id"), str) and isinstance(entry.get("event_id"), str):
            return entry["user_id"], entry["event_id"]
        return None


def decode_entry(entry: Any) -> Event | Rejection | None:
    """A log entry's value checked against the contract, once: the event, the rejection
    naming its field, or None for a flush marker. No size limits: those are intake's
    (``EventLimits``), so what was once accepted is never refused on replay."""
    if isinstance(entry, dict) and FlushMarker.is_flush(entry):
        return None
    return validate_event(entry)


def entry_item(position: str, entry: Any, text: str, poison: str | None = None,
               decoded: Event | Rejection | None = None, **where: Any) -> Item:
    """An :class:`Item` with its value decoded (:func:`decode_entry`), unless the driver
    did it already (``decoded``) or the entry is poison; ``where``: the other fields."""
    if poison is None and decoded is None:
        decoded = decode_entry(entry)
    return Item(position, entry, text, poison, decoded=decoded, **where)


class Counts(Protocol):
    """Where counter increments go (a store, or a :class:`Tally` written once)."""

    def incr(self, name: str, n: int = 1) -> None: ...


class Cursor(Protocol):
    """Where a unit's entries sit in their log: counts each entry once, moves past them."""

    def count(self, tally: Counts, item: Item, outcome: str, retries: int,
              closed: bool) -> None:
        """Counters for one entry (``closed``: its handling closed a range)."""
        ...

    def advance(self, tally: Counts, items: Sequence[Item]) -> None:
        """Move past ``items`` (the unit's applied ones), inside its transaction."""
        ...


class Tally:
    """Counter increments collected during a unit, written with one statement at its end."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def incr(self, name: str, n: int = 1) -> None:
        self.counts[name] += n

    def flush(self, store: Counters) -> None:
        counts = {name: n for name, n in self.counts.items() if n}
        if counts:
            store.incr_many(counts)  # one statement (both SQL stores)
        self.counts.clear()


class PositionedLetters:
    """Dead letters of a unit, each keyed by the position of the entry being handled
    (``#n`` for an entry's n-th), so a redelivered or re-applied entry stores nothing
    new; kept as JSON for the dead-letter topic (with their ``position``)."""

    def __init__(self, inner: KeyedDeadLetters) -> None:
        self.inner = inner  # a DeadLetterStore whose put_dead_letter takes a key (SQL)
        self.position = ""
        self.captured: list[bytes] = []
        self._per_position: Counter[str] = Counter()

    def put_dead_letter(self, letter: DeadLetter) -> None:
        n = self._per_position[self.position]
        self._per_position[self.position] += 1
        self.inner.put_dead_letter(letter, key=self.position if n == 0 else
                                   f"{self.position}#{n}")
        self.captured.append(orjson.dumps({**letter.to_dict(), "position": self.position}))

    def count_dead_letters(self) -> int:
        return int(self.inner.count_dead_letters())

    def list_dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        return list(self.inner.list_dead_letters(limit))


@dataclass
class UnitResult:
    """What a unit did: each applied entry's result, new memories, letters for the topic."""

    results: list[HandleResult] = field(default_factory=list)
    letters: list[bytes] = field(default_factory=list)

    @property
    def outcomes(self) -> list[str]:
        return [r.outcome for r in self.results]

    @property
    def observations(self) -> list[Observation]:
        return [o for r in self.results for o in r.observations]


#: A driver's transaction: given the unit's items, its letters and whether to keep what it
#: writes (False: a rehearsal, rolled back at the end), yields the ingest service bound to
#: the open transaction (and writes what it batched on the way out).
Scope = Callable[[Sequence[Item], PositionedLetters, bool],
                 AbstractContextManager[IngestService]]


@dataclass
class UnitOfWork:
    """One transaction of entries: applied, counted, the cursor moved — or nothing."""

    store: Store  # the SQL store the unit's counters, letters and tombstones are in
    scope: Scope
    cursor: Callable[[], Cursor]  # a fresh cursor for each transaction
    lane: PassageSink | None = None  # two speeds (embedded): chunks' vectors later
    read_ahead: bool = True  # the service reads the unit's events at once (else the scope)

    def apply(self, items: Sequence[Item], retries: int = 0,
              enough: Callable[[], bool] | None = None,
              prepared: Mapping[str, Sequence[float]] | None = None,
              out: UnitResult | None = None) -> UnitResult:
        """Apply ``items`` in order as one transaction (``enough``, asked after each
        entry, ends the unit early; at least one is applied). ``prepared``: vectors
        embedded ahead (a rehearsal's); ``out`` collects the results as they come (kept
        when the unit raises). An exception rolls everything back."""
        out = UnitResult() if out is None else out
        letters = PositionedLetters(self.store.dead_letters)
        tally, cursor = Tally(), self.cursor()
        with self.scope(items, letters, True) as service:
            ctx = self._context(items, letters, prepared=dict(prepared or {}))
            with service.batched(ctx) as block:
                applied = self._loop(block, items, letters, out, enough, lambda item, outcome,
                                     closed: cursor.count(tally, item, outcome, retries, closed))
            cursor.advance(tally, applied)
            tally.flush(self.store.counters)
        out.letters = letters.captured
        return out

    def rehearse(self, items: Sequence[Item], enough: Callable[[], bool] | None = None
                 ) -> tuple[int, list[str]]:
        """:meth:`apply` in a transaction the scope rolls back, writing nothing: how many
        entries it took (apply exactly those next) and the texts their block would embed.
        Counters and the cursor are left alone; an exception is the caller's."""
        out = UnitResult()
        letters = PositionedLetters(self.store.dead_letters)
        with self.scope(items, letters, False) as service:
            ctx = self._context(items, letters, rehearse=True)
            with service.batched(ctx) as block:
                self._loop(block, items, letters, out, enough, None)
        return len(out.results), list(block.texts or ())

    def _context(self, items: Sequence[Item], letters: PositionedLetters,
                 **more: Any) -> BatchContext:
        events = [ids for i in items if (ids := i.event_ids)] if self.read_ahead else None
        return BatchContext(events=events, letters=letters, lane=self.lane, **more)

    def _loop(self, block: IngestBlock, items: Sequence[Item], letters: PositionedLetters,
              out: UnitResult, enough: Callable[[], bool] | None,
              count: Callable[[Item, str, bool], None] | None) -> list[Item]:
        """The unit's entries through one block: each checked erasure (one lookup for the
        unit), handled and counted, until ``enough``; returns the applied ones."""
        gone = self._erased(items)
        applied: list[Item] = []
        for at, item in enumerate(items):
            letters.position = item.position
            result = HandleResult("erased") if at in gone else _handle(block, item)
            if count is not None:
                count(item, result.outcome, bool(result.observations))
            out.results.append(result)
            applied.append(item)
            if enough is not None and enough():
                break
        return applied

    def _erased(self, items: Sequence[Item]) -> set[int]:
        """Positions in ``items`` of the events an erasure covers (issue 26: a replay or a
        redelivery of a forgotten scope, or an erasure after intake), with one lookup."""
        at = [n for n, i in enumerate(items)
              if i.poison is None and isinstance(i.decoded, Event)]  # poison: a letter
        keys = [(e.user_id, e.thread_id, e.event_id, e.ts)
                for e in (items[n].decoded for n in at) if isinstance(e, Event)]
        if not keys:
            return set()
        return {at[n] for n in self.store.tombstones.erased_positions(keys)}

    def apply_one(self, item: Item, retries: int) -> UnitResult:
        """One entry as its own unit (the failure policy's attempts)."""
        return self.apply([item], retries)

    def give_up(self, item: Item, reason: str, attempts: int) -> UnitResult:
        """The entry failed ``attempts`` times: its dead letter (keyed by its position,
        with ``reason``), its counters and the cursor past it, as one transaction."""
        out = UnitResult()
        letters = PositionedLetters(self.store.dead_letters)
        letters.position = item.position
        tally, cursor = Tally(), self.cursor()
        log.error("giving up on %s after %s attempts: %s", item.position, attempts, reason)
        with self.scope([], letters, True) as service, service.batched(
                BatchContext(letters=letters)) as block:
            block.reject(f"{reason} (at {item.position})", None, item.text,
                         item.entry if isinstance(item.entry, dict) else None,
                         source="processor")  # a processing failure, not bad input
            cursor.count(tally, item, "dead_lettered", attempts - 1, False)
            cursor.advance(tally, [item])
            tally.flush(self.store.counters)
        out.results.append(HandleResult("dead_lettered", reason=reason))
        out.letters = letters.captured
        return out


def _handle(block: IngestBlock, item: Item) -> HandleResult:
    """One decoded entry: poison and invalid values become dead letters (failures as
    data), an event or a flush marker goes to the block."""
    entry = item.entry if isinstance(item.entry, dict) else None
    if item.poison is not None:
        return block.reject(f"{item.poison} (at {item.position})", None, item.text, entry)
    if isinstance(item.decoded, Rejection):
        return block.reject(item.decoded.message(), item.decoded.field, item.text, item.entry)
    return block.handle(item.decoded if item.decoded is not None else item.entry, item.text)


class Retrying:
    """The one retry-then-dead-letter step of every driver (:class:`FailurePolicy`)."""

    def __init__(self, policy: FailurePolicy | None = None) -> None:
        self.policy = policy or FailurePolicy()
        self.attempts = Attempts()  # failures per position, across calls
        self.delay = self.policy.base_delay  # wait this long before the next attempt

    def retries(self, position: str) -> int:
        """How often the entry at ``position`` failed so far."""
        return self.attempts.counts.get(position, 0)

    def attempt(self, position: str, apply: Callable[[int], T],
                give_up: Callable[[str, int], T]) -> T:
        """One attempt: ``apply(retries so far)``'s result. On failure the policy decides:
        give up (``give_up(reason, attempts)``'s result), or re-raise the error — the
        caller waits :attr:`delay` seconds and calls again."""
        try:
            result = apply(self.retries(position))
        except Exception as exc:
            failures = self.attempts.failed(position)
            decision = self.policy.decide(exc, failures)
            if decision.retry:
                self.delay = decision.delay
                log.warning("%s failed (attempt %s, %s); retrying in %.1f s: %s", position,
                            failures, "transient" if decision.transient else "permanent",
                            decision.delay, decision.reason)
                raise
            try:
                result = give_up(decision.reason, failures)
            except Exception:  # the letter could not be written (store down): try again
                self.delay = self.policy.backoff(failures)
                raise
        self.attempts.done(position)
        return result

    def until_done(self, position: str, apply: Callable[[int], T],
                   give_up: Callable[[str, int], T],
                   wait: Callable[[float], object]) -> T:
        """:meth:`attempt` until it returns, waiting with ``wait(seconds)`` in between
        (a blocking driver; the Faust agent awaits its waits so a shutdown can cancel)."""
        while True:
            try:
                return self.attempt(position, apply, give_up)
            except Exception:  # logged by attempt(); retried after the policy's delay
                wait(self.delay)

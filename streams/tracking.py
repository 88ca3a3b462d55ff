"""What both runners (embedded and Faust) keep besides the stores: idle threads and counters.

:class:`IdleTracker` remembers when each thread last got an event so an idle one gets a
flush marker; a thread being handled right now is never idle (slow embeds take seconds).
:func:`count_outcome` names the counters an applied message moves, so both runners count
the same way: each event once (a redelivery of an applied event counts as ``redeliveries``,
not again as ``events_processed``), retries and dead letters visible in ``/v1/stats``.

The Faust agent counts by Kafka position (:func:`count_message`): a message consumed
again at a position already counted (a redelivery after a crash or a rebalance) moves only
``redeliveries``; a message published straight to Kafka by the SDK (header
:data:`DIRECT_HEADER`; the HTTP gateway counts its own) adds to ``events_received`` once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from breadcrumb.stores.ports.tables import Counters, Counts, Store
from breadcrumb.streams.freshness import bucket_counter
from breadcrumb.topics.records import FlushMarker

#: Counters the runners add to the store's counters (``/v1/stats``, ``/metrics``).
RELIABILITY_COUNTERS = ("processing_failures", "dead_lettered", "retries", "redeliveries",
                        "flushes")
#: The counter each outcome moves. A rejected message (poison, an invalid event) is not
#: processed: its dead letter moves ``dead_lettered`` where it is written (the SQL store
#: counts each letter row it inserts), so the counter and the table cannot disagree.
_BY_OUTCOME: dict[str, str | None] = {
    "processed": "events_processed", "rejected": None, "dead_lettered": None,
    "duplicate": "redeliveries", "flushed": "flushes"}


#: Kafka header of a message published straight to ``agent-events`` (the SDK's Publisher):
#: the worker counts it as received, since no gateway saw it.
DIRECT_HEADER = "breadcrumb-direct"
_CONSUMED = "consumed_through:"  # + "topic/partition": the next offset not yet counted


def is_direct(headers: Mapping[str, Any] | Iterable[tuple[str, Any]] | None) -> bool:
    """Whether a consumed message carries :data:`DIRECT_HEADER` (Faust gives a list of
    pairs or a mapping)."""
    if not headers:
        return False
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return any(name == DIRECT_HEADER for name, _value in pairs)


def first_consumption(store: Counters, position: str) -> bool:
    """Whether the message at ``position`` (``topic/partition/offset``) is counted for the
    first time; records it. Call inside the message's transaction (a rollback forgets it).
    A partition is consumed in order, so one high-water per partition is enough."""
    partition, _, offset_text = position.rpartition("/")
    try:
        offset = int(offset_text)
    except ValueError:
        return True  # not a Kafka position: nothing to compare with
    name = _CONSUMED + partition
    through = int(store.get_counters().get(name, 0))
    if offset < through:
        return False
    store.incr(name, offset + 1 - through)
    return True


class ConsumedThrough:
    """:func:`first_consumption` for the many messages of one transaction (a batch): the
    counters are read once, each partition's high-water kept here and moved in the store
    (or in ``writes``, e.g. a batch's tally written once per counter at its end)."""

    def __init__(self, store: Counters, writes: Counts | None = None) -> None:
        self.store = store
        self.writes: Counts = store if writes is None else writes  # where ``incr`` goes
        self._through: dict[str, int] | None = None

    def first(self, position: str) -> bool:
        partition, _, offset_text = position.rpartition("/")
        try:
            offset = int(offset_text)
        except ValueError:
            return True
        if self._through is None:
            self._through = {name: int(value) for name, value in
                             self.store.get_counters().items() if name.startswith(_CONSUMED)}
        name = _CONSUMED + partition
        through = self._through.get(name, 0)
        if offset < through:
            return False
        self.writes.incr(name, offset + 1 - through)
        self._through[name] = offset + 1
        return True


def count_message(store: Counts, outcome: str, retries: int, first: bool,
                  direct: bool) -> None:
    """Counters for one consumed Kafka message (inside its transaction): a redelivery
    moves ``redeliveries`` only; a direct publish is received once; an event stored
    before under another position (a producer's resend) is a duplicate, as at the
    gateway."""
    if retries:
        store.incr("retries", retries)
    if not first:
        store.incr("redeliveries", 1)
        return
    if direct and outcome != "flushed":  # a flush marker is a control message
        store.incr("events_received", 1)
    if outcome == "duplicate":
        store.incr("duplicates", 1)
    elif outcome == "dead_lettered":
        store.incr("processing_failures", 1)
    else:
        counter = _BY_OUTCOME.get(outcome, "events_processed")
        if counter is not None:
            store.incr(counter, 1)


def count_outcome(store: Counts, outcome: str, retries: int = 0) -> None:
    """Move the counters for one applied message (call inside its transaction)."""
    count_outcomes(store, {outcome: 1})
    if retries:
        store.incr("retries", retries)


def count_outcomes(store: Counts, outcomes: Mapping[str, int]) -> None:
    """:func:`count_outcome` for many messages at once: ``outcome -> messages``."""
    moved: dict[str, int] = {}
    for outcome, n in outcomes.items():
        name = _BY_OUTCOME.get(outcome, "events_processed")
        if name is not None:
            moved[name] = moved.get(name, 0) + n
    for name, n in moved.items():
        if n:
            store.incr(name, n)


def count_dead_letter(store: Counts, retries: int) -> None:
    """Counters for a message given up on (call inside the dead letter's transaction; the
    letter itself moves ``dead_lettered``)."""
    store.incr("processing_failures", 1)
    if retries:
        store.incr("retries", retries)


class KafkaOffsets:
    """The ingest core's cursor over Kafka partitions (one per unit of work): each message
    counted once by its position (:class:`ConsumedThrough`; a redelivery moves only
    ``redeliveries``) and the freshness of the first-consumed ones recorded at the end."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._seen: ConsumedThrough | None = None
        self._fresh: list[tuple[float, str, bool]] = []  # (accepted, outcome, closed)

    def count(self, tally: Any, item: Any, outcome: str, retries: int, closed: bool) -> None:
        if self._seen is None:
            self._seen = ConsumedThrough(self.store.counters, writes=tally)
        first = self._seen.first(item.position)
        count_message(tally, outcome, retries, first, item.direct)
        if first and item.accepted is not None:
            self._fresh.append((item.accepted, outcome, closed))

    def advance(self, tally: Any, items: Sequence[Any]) -> None:
        """Kafka offsets are acknowledged by the driver after the commit; here only the
        freshness of the unit's messages goes into its counters."""
        count_freshness(tally, self._fresh, time.time())
        self._fresh = []


def count_freshness(tally: Any, fresh: Sequence[tuple[float, str, bool]], now: float) -> None:
    """Freshness (issue 14) of a unit's first-consumed messages, into its counters: an
    event is recallable from its unit's commit (accepted = its Kafka timestamp, set when
    the gateway produced it); a message whose handling closed a range also counts as
    accepted → memory (memory and chunk rows committed, vectors written or acked on the
    vectors topic; a ``VectorSink``'s lag is not in it). ``now``: the unit's last
    statement before its commit."""
    for accepted, outcome, closed in fresh:
        if outcome == "processed":
            tally.incr(bucket_counter("recallable", now - accepted))
        if closed and outcome in ("processed", "flushed"):
            tally.incr(bucket_counter("memory", now - accepted))


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

"""Raw events the embedded store wrote, kept by thread and index for the range reads.

A memory is built from its range's raw events (``get_range``: the observer, the chunker,
the lifecycle). The fair runner applies a thread's events one or two per batch, so a
range's events were written over many batches and every range was read back from SQL
(``SELECT`` + a row decoded per event: ~3.5 % of a ``bench.derive`` drain). Here the
events this store inserted are kept (the same objects the batch's own read-back already
served, ``stores.sql.raw_batch``) and a range that is complete in memory is served from it.

Exactness: an event enters the cache when the transaction that inserted it commits (a
rollback forgets it); a statement that changes ``raw_events`` other than by inserting
(the archive's ``DELETE``) empties the cache, so a range read never returns an event the
table no longer holds. Events read from SQL are not cached; a range not complete in memory
is read from SQL as before. At most :data:`EVENT_CACHE_MAX` events and
:data:`EVENT_CACHE_BYTES` of their contents are kept: real sessions' tool outputs and file
bodies run to tens of kilobytes an event, so a bound by count alone held hundreds of
megabytes (the soak's server grew with every stored event until the count was reached).
"""

from __future__ import annotations

from collections.abc import Sequence

from breadcrumb.stores.sql.core import SqlDatabase
from breadcrumb.stores.sql.events import SqlEvents
from breadcrumb.stores.sql.sqlite.database import TransactionListener
from breadcrumb.stores.sql.sqlite.memories import KeptRows
from breadcrumb.topics.records import Event

ThreadEvents = dict[tuple[str, str], dict[int, Event]]  # (user_id, thread_id) -> idx -> event
#: Events kept at most (cleared, not evicted one by one, when reached; a miss only costs
#: the read it used to).
EVENT_CACHE_MAX = 50_000
#: ... and their contents at most (characters, plus :data:`EVENT_OVERHEAD` an event)
EVENT_CACHE_BYTES = 16 * 2**20
EVENT_OVERHEAD = 400  # an Event object, its attrs and the dict slots holding it


def _weight(event: Event) -> int:
    return len(event.content) + EVENT_OVERHEAD


class HeldEvents(TransactionListener):
    """The events the store inserted, by thread and index: those of the open transaction,
    and the committed ones (see the module docstring)."""

    def __init__(self) -> None:
        self.held: ThreadEvents = {}  # committed
        self.count = 0
        self.bytes = 0
        self.staged: ThreadEvents = {}  # inserted in the open transaction

    def stage(self, events: Sequence[Event]) -> None:
        """Events inserted in the open transaction (held once it commits)."""
        for event in events:
            assert event.index is not None  # put_event(s) refuse events without one
            self.staged.setdefault((event.user_id, event.thread_id), {})[event.index] = event

    def range(self, key: tuple[str, str], start: int, end: int,
              own: bool = True) -> list[Event] | None:
        """The range from memory when every index of it is held (with ``own``, this
        transaction's inserts first), else None. An event enters ``held`` only after its
        COMMIT, so a reader that misses part of a range reads SQL, which has it."""
        tx = self.staged.get(key, {}) if own else {}
        held = self.held.get(key, {})
        if end < start or not (tx or held):
            return None
        out: list[Event] = []
        for index in range(start, end + 1):
            event = tx.get(index)
            if event is None:
                event = held.get(index)
                if event is None:
                    return None
            out.append(event)
        return out

    def committed(self) -> None:
        """The transaction committed: its inserted events are now in the table."""
        staged, self.staged = self.staged, {}
        count = sum(len(v) for v in staged.values())
        weight = sum(_weight(e) for v in staged.values() for e in v.values())
        if (self.count + count > EVENT_CACHE_MAX
                or self.bytes + weight > EVENT_CACHE_BYTES):
            self.held, self.count, self.bytes = {}, 0, 0
        for key, events in staged.items():
            mine = self.held.setdefault(key, {})
            for index, event in events.items():
                old = mine.get(index)
                if old is None:
                    self.count += 1
                else:
                    self.bytes -= _weight(old)
                self.bytes += _weight(event)
            mine.update(events)

    def rolled_back(self) -> None:
        self.staged = {}

    def reset(self) -> None:
        self.held, self.count, self.bytes, self.staged = {}, 0, 0, {}

    def statement(self, sql: str) -> None:
        """Empty the cache before a statement that changes ``raw_events`` otherwise than by
        an insert (the archive's ``DELETE`` of an archived range)."""
        if "raw_events" in sql and sql.lstrip()[:6].upper() not in ("SELECT", "INSERT"):
            self.reset()


class SqliteEvents(SqlEvents):
    """``put_event(s)`` / ``get_range`` of :class:`~stores.sql.events.SqlEvents` with the
    inserted events kept in memory (:class:`HeldEvents`), and ``get_events`` (recall's
    evidence) served from the rows read since the last write (``stores.sql.sqlite.memories``)."""

    def __init__(self, db: SqlDatabase, held: HeldEvents, kept: KeptRows) -> None:
        super().__init__(db)
        self.held = held
        self.kept = kept

    # Staged inside the insert's transaction (a caller's, or one of its own): its commit
    # moves them to ``held`` at once, not at some later commit.
    def put_event(self, event: Event) -> bool:
        with self.db.transaction():
            inserted = super().put_event(event)
            if inserted:
                self.held.stage([event])
        return inserted

    def put_events(self, events: Sequence[Event]) -> None:
        with self.db.transaction():
            super().put_events(events)
            self.held.stage(events)

    def get_range(self, user_id: str, thread_id: str, start: int, end: int) -> list[Event]:
        # a thread outside the writer's lock sees committed events only (.readers):
        # the open transaction's inserts are not read, and the writer is not waited for
        found = self.held.range((user_id, thread_id), start, end, self.db.writer_owned())
        if found is not None:
            return found
        return super().get_range(user_id, thread_id, start, end)

    def get_events(self, user_id: str, event_ids: Sequence[str]) -> dict[str, Event]:
        if self.db.writer_owned():
            return super().get_events(user_id, event_ids)
        keys = {f"{user_id}\0{i}": i for i in dict.fromkeys(event_ids)}
        found = self.kept.read(self.kept.events, list(keys), lambda missing: {
            f"{user_id}\0{e.event_id}": e for e in super(SqliteEvents, self).get_events(
                user_id, [keys[k] for k in missing]).values()})
        return {keys[k]: e for k in keys if (e := found.get(k)) is not None}

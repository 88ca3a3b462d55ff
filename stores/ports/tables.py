"""The ports of a SQL store's table objects: what each object the store hands out offers.

A SQL store (:class:`~stores.sql.base.SqlStore`: ``SqliteStore`` embedded, ``MySqlStore`` in
cluster mode) is one database and one object per concern, each implementing one Protocol
here: ``store.events`` (:class:`RawEvents`), ``store.memories`` (:class:`MemoryRows`),
``store.chunks`` (:class:`ChunkRows`), ``store.audit`` (:class:`AuditTrail`),
``store.dead_letters`` (:class:`KeyedDeadLetters`), ``store.states`` (:class:`ThreadStates`),
``store.log`` (:class:`EventLog`), ``store.counters`` (:class:`Counters`), ``store.erasure``
(:class:`Erasure`), ``store.tombstones`` (:class:`Tombstones`), ``store.browse``
(:class:`MemoryBrowse`), and the lifecycle's tables (``store.lifecycle_tables``: facts
:class:`FactTable`, lives :class:`LifeTable`, changelog :class:`MemoryChangelog`, archived
ranges :class:`ArchivedRanges`). A caller that needs one concern takes its port; one that
writes several in one transaction takes the :class:`Store`. Wrappers (a batch's raw events
or states, the archive-aware raw events) implement the same Protocols.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from breadcrumb.processors.lifecycle import MemoryLife
from breadcrumb.processors.supersession import FactRow
from breadcrumb.stores.ports import (
    BatchedEventReads,
    MemoryRowReads,
    MemoryStore,
    OpenWindowStates,
    RawEventStore,
    StatusTierGrid,
    ThreadStateStore,
)
from breadcrumb.topics.records import Chunk, DeadLetter, Event, MemoryStatusChange, Observation

#: One item for ``EventLog.append_log``: (user_id, event_id, thread_key, payload_json).
LogItem = tuple[str | None, str | None, str, str]


@runtime_checkable
class RawEvents(RawEventStore, BatchedEventReads, Protocol):
    """The raw events of a SQL store: by id (one or many), by thread range, inserted many
    at once, and every one in (user, thread, index) order (a replay)."""

    def put_events(self, events: Sequence[Event]) -> None: ...

    def iter_all_events(self, after: tuple[str, str, int] | None = None,
                        batch: int = 500) -> Iterator[Event]: ...


class ChunkRows(Protocol):
    """A memory's source chunks: written with it, read in source order or by id."""

    def put_chunks(self, chunks: Sequence[Chunk]) -> None: ...

    def get_chunks(self, user_id: str, memory_id: str) -> list[Chunk]: ...

    def get_chunks_by_id(self, user_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]: ...


class MemoryRows(MemoryStore, MemoryRowReads, StatusTierGrid, Protocol):
    """The memories of a SQL store: ``MemoryStore`` with whole rows (usage and lifecycle
    columns), many written at once, pages of a user's memories and status changes."""

    def upsert_memories(self, observations: Sequence[Observation]) -> None: ...

    def get_memory_row(self, user_id: str, memory_id: str) -> dict[str, Any] | None: ...

    def list_memories(self, user_id: str, limit: int = 100,
                      offset: int = 0) -> list[Observation]: ...

    def apply_status_change(self, change: MemoryStatusChange) -> bool: ...

    def get_chunks_by_id(self, user_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]: ...


class ThreadStates(ThreadStateStore, OpenWindowStates, Protocol):
    """Thread states of a SQL store: many keys at once, those with open windows."""

    def get_states(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]: ...

    def put_states(self, states: Sequence[tuple[str, dict[str, Any]]]) -> None: ...

    def list_states(self, pending_only: bool = True) -> list[tuple[str, dict[str, Any]]]: ...

    def count_pending_window_events(self) -> int: ...


class EventLog(Protocol):
    """The embedded event log: intake appends, the runner and replay read in order."""

    def append_log(self, payloads: Sequence[LogItem]) -> list[bool]: ...

    def read_log(self, after_seq: int, limit: int) -> list[tuple[int, str]]: ...

    def read_log_all(self, after_seq: int, limit: int) -> list[tuple[int, str]]: ...

    def read_log_keys(self, after_seq: int, limit: int) -> list[tuple[int, str, str]]: ...

    def read_log_entries(self, seqs: Sequence[int]) -> dict[int, str]: ...

    def mark_processed(self, seq: int) -> None: ...

    def mark_processed_many(self, seqs: Sequence[int]) -> None: ...

    def max_log_seq(self) -> int: ...

    def max_processed_seq(self) -> int: ...

    def count_log(self) -> int: ...

    def count_unprocessed(self) -> int: ...

    def count_log_after(self, seq: int, thread_key: str | None = None) -> int: ...


class Counts(Protocol):
    """Where counter increments go (the store's counters, or a tally written once)."""

    def incr(self, name: str, n: int = 1) -> None: ...


class Counters(Counts, Protocol):
    """Named counters: added to, set, dropped, read all at once."""

    def incr_many(self, counts: Mapping[str, int]) -> None: ...

    def set_counter(self, name: str, value: int) -> None: ...

    def drop_counters(self, names: Sequence[str]) -> None: ...

    def get_counters(self) -> dict[str, int]: ...


class AuditTrail(Protocol):
    """Who changed which field of a memory, when and why."""

    def add_audit(self, memory_id: str, user_id: str, at: str, actor: str, field: str,
                  from_value: str | None, to_value: str | None, reason: str | None) -> None: ...

    def add_audits(self, rows: Sequence[tuple[Any, ...]]) -> None: ...

    def list_audit(self, user_id: str, memory_id: str) -> list[dict[str, Any]]: ...


class KeyedDeadLetters(Protocol):
    """Dead letters keyed by their position: a redelivered message is kept once."""

    def put_dead_letter(self, letter: DeadLetter, key: str | None = None) -> bool: ...

    def dead_letter_positions(self, limit: int = 100) -> list[tuple[str, str, str]]: ...

    def count_dead_letters(self) -> int: ...

    def list_dead_letters(self, limit: int = 100) -> list[DeadLetter]: ...

    def redrive_of(self, letter_id: int) -> dict[str, Any] | None: ...

    def add_redrive(self, letter_id: int, at: str, actor: str, outcome: str) -> None: ...


class FactTable(Protocol):
    """A memory's facts (key, value, when, current or superseded), by memory and by key."""

    def replace_facts(self, user_id: str, memory_id: str, facts: Sequence[FactRow],
                      held: Sequence[str] | None = None) -> list[str]: ...

    def fact_keys_of(self, memory_ids: Sequence[str]) -> dict[str, list[str]]: ...

    def current_facts(self, user_id: str, keys: Sequence[str]) -> list[FactRow]: ...

    def current_facts_any_status(self, user_id: str, keys: Sequence[str]
                                 ) -> list[tuple[FactRow, str]]: ...

    def facts_in_any_state(self, user_id: str, keys: Sequence[str]) -> list[FactRow]: ...

    def facts_of(self, memory_id: str, state: str = "current") -> list[FactRow]: ...

    def fact_states_of(self, memory_id: str) -> list[tuple[str, str]]: ...

    def mark_fact(self, memory_id: str, key: str, state: str) -> None: ...


class LifeTable(Protocol):
    """A memory's life: its tier's start and hit window, the notes and deletes the
    lifecycle writes to its row, the owner of a bare id."""

    def ensure_life(self, user_id: str, memory_id: str, since: str) -> None: ...

    def insert_missing_life_sql(self) -> str: ...

    def set_life(self, user_id: str, memory_id: str, tier_since: str, hits_base: int,
                 window_start: str | None) -> None: ...

    def set_window(self, memory_id: str, hits_base: int, window_start: str) -> None: ...

    def get_life(self, user_id: str, memory_id: str) -> MemoryLife | None: ...

    def iter_lives(self, batch: int = 1000) -> Iterator[MemoryLife]: ...

    def set_metadata(self, user_id: str, memory_id: str, metadata: dict[str, Any]) -> None: ...

    def owner_of(self, memory_id: str) -> str | None: ...

    def delete_memory(self, user_id: str, memory_id: str) -> bool: ...


class MemoryChangelog(Protocol):
    """The embedded changelog of memory status values (None: a tombstone), in order."""

    def append_change(self, memory_id: str, user_id: str, payload: dict[str, Any] | None,
                      at: str) -> None: ...

    def read_changes(self, after_seq: int = 0, limit: int = 10_000
                     ) -> list[tuple[int, str, str, dict[str, Any] | None]]: ...


class ArchivedRanges(Protocol):
    """Source ranges whose events live in cold storage, and the hot rows they replace."""

    def add_archived(self, user_id: str, thread_id: str, start: int, end: int,
                     key: str) -> None: ...

    def remove_archived(self, user_id: str, thread_id: str, start: int) -> None: ...

    def has_archived(self, user_id: str) -> bool: ...

    def archived_overlapping(self, user_id: str, thread_id: str | None, start: int,
                             end: int) -> list[tuple[str, int, int, str]]: ...

    def delete_raw_range(self, user_id: str, thread_id: str, start: int, end: int) -> int: ...

    def delete_chunks(self, user_id: str, memory_id: str) -> int: ...


@dataclass(frozen=True, slots=True)
class Scope:
    """What to forget: a memory, a thread or a whole tenant (``user_id``)."""

    kind: str
    user_id: str
    thread_id: str | None = None
    memory_id: str | None = None


@dataclass(slots=True)
class Plan:
    """What an erasure found before deleting: ids of the rows and objects to remove."""

    scope: Scope
    memory_ids: list[str] = field(default_factory=list)
    event_ids: list[str] = field(default_factory=list)  # memory scope: its range's events
    thread_id: str | None = None
    start: int = 0
    end: int = -1
    cold_keys: list[str] = field(default_factory=list)


class Erasure(Protocol):
    """Forgetting a memory, a thread or a tenant in one store (issue 26), and its audit."""

    def ensure_tables(self) -> None: ...

    def plan(self, scope: Scope) -> Plan | None: ...

    def erase(self, p: Plan) -> dict[str, int]: ...

    def write_audit(self, scope: Scope, at: str, actor: str, counts: dict[str, int]) -> None: ...

    def list_audit(self, user_id: str | None) -> list[dict[str, Any]]: ...


class Tombstones(Protocol):
    """What an erasure leaves so intake and the processors refuse the scope again."""

    def write(self, p: Plan, at: str, actor: str) -> None: ...

    def erased_positions(self, events: Sequence[tuple[str, str, str, str]]) -> set[int]: ...

    def is_erased(self, user_id: str, thread_id: str, event_id: str, ts: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """What ``GET /v1/memories`` narrows by (None: any)."""

    user_id: str
    project_id: str | None = None
    thread_id: str | None = None
    status: str | None = None
    tier: str | None = None
    tag: str | None = None
    text: str | None = None


class MemoryBrowse(Protocol):
    """The browsing reads (issue 26): pages of a user's memories, a memory's versions and
    its facts' values, the user's threads, the dead letters. Each scoped to one user (dead
    letters: all for None, an admin)."""

    def list_memories(self, flt: MemoryFilter, sort: str = "time", limit: int = 50,
                      cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]: ...

    def versions(self, user_id: str, memory_id: str, limit: int = 200
                 ) -> list[dict[str, Any]]: ...

    def fact_versions(self, user_id: str, memory_id: str) -> list[dict[str, Any]]: ...

    def list_threads(self, user_id: str, project_id: str | None = None, limit: int = 100,
                     after: str | None = None) -> tuple[list[dict[str, Any]], str | None]: ...

    def thread_memory_counts(self, user_id: str, thread_ids: Sequence[str]
                             ) -> dict[str, int]: ...

    def list_dead_letters(self, user_id: str | None, limit: int = 100,
                          before: int | None = None) -> list[dict[str, Any]]: ...

    def get_dead_letter(self, letter_id: int) -> dict[str, Any] | None: ...


class Explorer(Protocol):
    """The dashboard explorer's reads (issue 47): the tenants a service holds (an admin's),
    a thread's header, a tenant's threads by last event, its fact keys and one key's values
    across its memories. Each but ``list_tenants`` scoped to one user."""

    def list_tenants(self, limit: int = 500) -> list[dict[str, Any]]: ...

    def thread_info(self, user_id: str, thread_id: str) -> dict[str, Any] | None: ...

    def threads_by_last_event(self, user_id: str, limit: int = 100,
                              before: tuple[str, str] | None = None
                              ) -> tuple[list[dict[str, Any]], tuple[str, str] | None]: ...

    def fact_keys(self, user_id: str, text: str | None = None,
                  limit: int = 50) -> list[dict[str, Any]]: ...

    def fact_rows(self, user_id: str, key: str, limit: int = 500) -> list[dict[str, Any]]: ...


class Store(Protocol):
    """A SQL store: its table objects, and one transaction over all of them."""

    @property
    def events(self) -> RawEvents: ...

    @property
    def memories(self) -> MemoryRows: ...

    @property
    def chunks(self) -> ChunkRows: ...

    @property
    def audit(self) -> AuditTrail: ...

    @property
    def dead_letters(self) -> KeyedDeadLetters: ...

    @property
    def states(self) -> ThreadStates: ...

    @property
    def log(self) -> EventLog: ...

    @property
    def counters(self) -> Counters: ...

    @property
    def erasure(self) -> Erasure: ...

    @property
    def tombstones(self) -> Tombstones: ...

    @property
    def browse(self) -> MemoryBrowse: ...

    @property
    def explore(self) -> Explorer: ...

    def transaction(self, keep: bool = True) -> AbstractContextManager[None]:
        """One atomic unit; ``keep=False``: rolled back at its end (a rehearsal)."""
        ...

    def serialized(self, users: Iterable[str]) -> AbstractContextManager[None]: ...

    def close(self) -> None: ...

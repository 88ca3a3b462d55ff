"""SQL logic shared by :class:`~stores.sql.sqlite_store.SqliteStore` and
:class:`~stores.sql.mysql_store.MySqlStore`: the raw events, memories, chunks, dead letters,
thread state, audit trail, the embedded runner's event log and counters.

Subclasses supply the connection, the :class:`~stores.sql.schema.Dialect` and how a
transaction begins. One connection per store, guarded by a re-entrant lock: the HTTP server
and the background processor may share a store across threads.

Every write runs inside :meth:`SqlStore.transaction`. Calls nested inside an open
transaction join it (nothing commits until the outermost block exits; an exception escaping
any level rolls the whole transaction back).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from typing import Any

from breadcrumb.stores.sql import migrate as sql_migrate
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.states import LogItem, LogStateMixin
from breadcrumb.topics.records import Chunk, DeadLetter, Event, MemoryStatusChange, Observation

Row = tuple[Any, ...]
__all__ = ["LogItem", "Row", "SqlStore"]
#: One row per dead letter written with a key (its position: ``log:<seq>`` or
#: ``<topic>/<partition>/<offset>``): a redelivered message is not dead-lettered twice.
#: The counter of dead letters written (``/v1/stats`` ``dead_lettered``, ``/metrics``).
DEAD_LETTERED = "dead_lettered"
DEAD_LETTER_KEYS = s._t("dead_letter_keys", "letter_key:key! dead_letter_id:int!", "letter_key")


class StoreError(Exception):
    """Base of the SQL stores' errors."""


class StoreClosedError(StoreError):
    """A method needing the database was called before ``open()`` or after ``close()``."""


class IndexConflictError(StoreError):
    """A different event already holds this (user_id, thread_id, index)."""


class TenantMismatchError(StoreError):
    """A memory id already belongs to another user."""


class SqlStore(LogStateMixin, ABC):
    """RawEventStore + MemoryStore + DeadLetterStore + ThreadStateStore over one SQL database.

    Constructors do not connect; :meth:`open` connects and creates the tables (idempotent).
    """

    dialect: s.Dialect
    #: Exception classes the driver raises on a UNIQUE / PRIMARY KEY violation.
    integrity_errors: tuple[type[Exception], ...] = ()

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._conn: Any = None
        self._depth = 0

    # --- backend hooks ---------------------------------------------------------------------

    @abstractmethod
    def _connect(self) -> Any:
        """Open and return a DB-API connection."""

    @abstractmethod
    def _begin(self) -> None:
        """Start a transaction on ``self._conn``."""

    def _commit(self) -> None:
        self._conn.commit()

    def _rollback(self) -> None:
        self._conn.rollback()

    @abstractmethod
    def _is_duplicate(self, exc: Exception) -> bool:
        """True if an integrity error is a UNIQUE / PRIMARY KEY clash (not e.g. NOT NULL)."""

    # --- lifecycle --------------------------------------------------------------------------

    def open(self) -> None:
        """Connect and create missing tables and indexes. A second call does nothing."""
        with self._lock:
            if self._conn is not None:
                return
            self._conn = self._connect()
            try:
                with self.transaction():
                    for stmt in (x for t in (*s.TABLES, DEAD_LETTER_KEYS)
                                 for x in self.dialect.create_table(t)):
                        self._execute(stmt)
                    sql_migrate.upgrade(self)  # issue 12: schema version + upgrade steps
            except BaseException:
                self.close()  # a half-opened store must not look open
                raise

    def close(self) -> None:
        """Close the connection (safe to call twice). ``open()`` may be called again."""
        with self._lock:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                conn.close()

    def __enter__(self) -> SqlStore:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def drop_tables(self) -> None:
        """Drop every Breadcrumb table (tests, ``reset``). Call ``open()`` again to recreate."""
        with self.transaction():
            for name in (DEAD_LETTER_KEYS.name, *reversed(s.TABLE_NAMES)):
                self._execute(f"DROP TABLE IF EXISTS {name}")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic unit: commit when the outermost block exits, roll back on exception."""
        with self._lock:
            self._require_open()
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._begin()
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth = 0
                self._rollback()
                raise
            self._depth = 0
            try:
                self._commit()
            except BaseException:
                self._rollback()
                raise

    @contextmanager
    def serialized(self, users: Iterable[str]) -> Iterator[None]:
        """Hold ``users`` against every other writer of this database for the block (take
        it OUTSIDE ``transaction()``). A lifecycle step reads the user's other memories and
        facts (duplicates, supersession, verification), so two workers handling two threads
        of one user at once must not both miss the other's rows. One process per file here
        (SQLite): nothing to do; the MySQL store takes named server locks."""
        del users
        yield

    # --- statement helpers (callers hold the lock) ------------------------------------------

    def _require_open(self) -> Any:
        if self._conn is None:
            raise StoreClosedError(f"{type(self).__name__} is not open")
        return self._conn

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        with closing(self._require_open().cursor()) as cur:
            cur.execute(self.dialect.sql(sql), tuple(params))
            return int(cur.rowcount)

    def _execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with closing(self._require_open().cursor()) as cur:
            cur.executemany(self.dialect.sql(sql), [tuple(r) for r in rows])

    def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with closing(self._require_open().cursor()) as cur:
            cur.execute(self.dialect.sql(sql), tuple(params))
            return [tuple(r) for r in cur.fetchall()]

    def _writer_owned(self) -> bool:
        """Whether the calling thread holds the store lock (its own transaction, or a
        block that must see the transaction's writes)."""
        return bool(self._lock._is_owned())  # type: ignore[attr-defined]  # RLock: this thread

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """A read outside (or inside) a transaction, under the lock."""
        with self._lock:
            return self._fetch(sql, params)

    def _insert_unique(self, sql: str, params: Sequence[Any]) -> bool:
        """Run an INSERT; False when it hit a UNIQUE/PRIMARY KEY (statement rolled back only)."""
        try:
            self._execute(sql, params)
        except self.integrity_errors as exc:
            if not self._is_duplicate(exc):
                raise
            return False
        return True

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> int:
        rows = self._read(sql, params)
        return int(rows[0][0] or 0) if rows else 0

    # --- RawEventStore ----------------------------------------------------------------------

    def put_event(self, event: Event) -> bool:
        """Store an indexed event; False (and no change) when its event_id already exists.

        Raises :class:`IndexConflictError` when another event holds the same index.
        """
        if event.index is None:
            raise ValueError(f"event {event.event_id!r} has no index")
        with self.transaction():
            if self._insert_unique(s.INSERT_EVENT, s.event_to_row(event)):
                return True
            if self._fetch("SELECT 1 FROM raw_events WHERE user_id = ? AND event_id = ?",
                           (event.user_id, event.event_id)):
                return False
        raise IndexConflictError(
            f"user {event.user_id!r} thread {event.thread_id!r} index {event.index} is held "
            f"by another event (rejected {event.event_id!r})")

    def get_event(self, user_id: str, event_id: str) -> Event | None:
        """The event with this id, of this user only."""
        rows = self._read(f"{s.SELECT_EVENTS} WHERE user_id = ? AND event_id = ?",
                          (user_id, event_id))
        return s.event_from_row(rows[0]) if rows else None

    def get_events(self, user_id: str, event_ids: Sequence[str]) -> dict[str, Event]:
        """Issue 14: the stored events of ``user_id`` among ``event_ids`` (one statement)."""
        ids = list(dict.fromkeys(event_ids))
        if not ids:
            return {}
        rows = self._read(f"{s.SELECT_EVENTS} WHERE user_id = ? AND event_id IN "
                          f"({s.marks(len(ids))})", (user_id, *ids))
        return {e.event_id: e for e in map(s.event_from_row, rows)}

    def put_events(self, events: Sequence[Event]) -> None:
        """Issue 14: insert new indexed events in one statement (a batch that already
        checked they are new; a duplicate raises and the caller's transaction rolls back)."""
        if events:
            with self.transaction():
                self._execute_many(s.INSERT_EVENT, [s.event_to_row(e) for e in events])

    def get_range(self, user_id: str, thread_id: str, start: int, end: int) -> list[Event]:
        """Events with start <= index <= end, in index order."""
        rows = self._read(
            f"{s.SELECT_EVENTS} WHERE user_id = ? AND thread_id = ? AND idx >= ? AND idx <= ?"
            " ORDER BY idx", (user_id, thread_id, start, end))
        return [s.event_from_row(r) for r in rows]

    def count_events(self) -> int:
        """All stored events, every user."""
        return self._scalar("SELECT COUNT(*) FROM raw_events")

    def iter_all_events(self, after: tuple[str, str, int] | None = None,
                        batch: int = 500) -> Iterator[Event]:
        """Every event ordered by (user_id, thread_id, index), strictly after ``after``.

        Reads in keyset pages of ``batch`` rows; resume by passing the last
        ``(user_id, thread_id, index)`` seen.
        """
        cursor = after
        while True:
            rows = self._events_after(cursor, batch)
            yield from (s.event_from_row(r) for r in rows)
            if len(rows) < batch:
                return
            cursor = (rows[-1][0], rows[-1][1], int(rows[-1][2]))

    def _events_after(self, after: tuple[str, str, int] | None, batch: int) -> list[Row]:
        order = " ORDER BY user_id, thread_id, idx LIMIT ?"
        if after is None:
            return self._read(s.SELECT_EVENTS + order, (batch,))
        u, t, i = after
        where = " WHERE user_id > ? OR (user_id = ? AND (thread_id > ? OR " \
                "(thread_id = ? AND idx > ?)))"
        return self._read(s.SELECT_EVENTS + where + order, (u, u, t, t, i, batch))

    # --- MemoryStore -------------------------------------------------------------------------

    def upsert_memory(self, observation: Observation, at: str | None = None) -> None:
        """Insert or re-derive a memory; idempotent for the same observation.

        On an existing id the derived fields (summary, source range, tags, hints, facts,
        metadata, importance, ...) are overwritten; ``status``, ``tier``, ``superseded_by``,
        ``hit_count`` and ``last_used_at`` are kept because the lifecycle owns them.
        ``updated_at`` is ``at`` or, for replay determinism, the observation's ``created_at``.
        Raises :class:`TenantMismatchError` if the id belongs to another user.
        """
        row = s.observation_to_row(observation, at or observation.created_at)
        sql = self.dialect.upsert("agent_memories", s.MEMORY_COLUMNS, ("id",), s.MEMORY_DERIVED)
        with self.transaction():
            owner = self._fetch("SELECT user_id FROM agent_memories WHERE id = ?",
                                (observation.id,))
            if owner and owner[0][0] != observation.user_id:
                raise TenantMismatchError(f"memory {observation.id!r} belongs to another user")
            self._execute(sql, row)

    def upsert_memories(self, observations: Sequence[Observation]) -> None:
        """Issue 14: :meth:`upsert_memory` for many (a derivation batch): one owner check
        and one statement. Raises :class:`TenantMismatchError` before writing anything."""
        if not observations:
            return
        sql = self.dialect.upsert("agent_memories", s.MEMORY_COLUMNS, ("id",), s.MEMORY_DERIVED)
        with self.transaction():
            ids = list(dict.fromkeys(o.id for o in observations))
            owners: dict[str, str] = {}
            for start in range(0, len(ids), 500):
                part = ids[start:start + 500]
                owners.update((_text(i), _text(u)) for i, u in self._fetch(
                    f"SELECT id, user_id FROM agent_memories WHERE id IN ({s.marks(len(part))})",
                    part))
            for o in observations:
                if owners.setdefault(o.id, o.user_id) != o.user_id:
                    raise TenantMismatchError(f"memory {o.id!r} belongs to another user")
            self._execute_many(sql, [s.observation_to_row(o, o.created_at) for o in observations])

    def get_memory(self, user_id: str, memory_id: str) -> Observation | None:
        """The memory if it belongs to ``user_id``."""
        found = self.get_memories(user_id, [memory_id])
        return found[0] if found else None

    def get_memories(self, user_id: str, memory_ids: Sequence[str]) -> list[Observation]:
        """Memories of ``user_id`` in the order of ``memory_ids`` (missing and other users'
        ids are skipped, repeated ids returned once)."""
        return s.observations_from_rows(self._memory_rows(user_id, memory_ids))

    def get_memory_row(self, user_id: str, memory_id: str) -> dict[str, Any] | None:
        """The full ``agent_memories`` row incl. ``hit_count``, ``last_used_at``,
        ``superseded_by`` and ``updated_at`` (JSON columns decoded)."""
        rows = self._memory_rows(user_id, [memory_id])
        return s.memory_row_dict(rows[0]) if rows else None

    def get_memory_rows(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Issue 14: :meth:`get_memory_row` for many ids (one read per 500), by id."""
        ids = list(dict.fromkeys(memory_ids))
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), 500):
            for r in self._memory_rows(user_id, ids[start:start + 500]):
                out[_text(r[0])] = s.memory_row_dict(r)
        return out

    def _memory_rows(self, user_id: str, memory_ids: Sequence[str]) -> list[Row]:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return []
        # Look up by primary key and check the owner here: with ``user_id = ?`` in the WHERE
        # clause SQLite picks the (user_id, status) index and scans every memory of the user.
        rows = self._read(f"{s.SELECT_MEMORIES} WHERE id IN ({s.marks(len(ids))})", ids)
        by_id = {_text(r[0]): r for r in rows if _text(r[1]) == user_id}
        return [by_id[i] for i in ids if i in by_id]

    def list_memories(self, user_id: str, limit: int = 100, offset: int = 0) -> list[Observation]:
        """A page of the user's memories, newest ``created_at`` first (ties by id)."""
        rows = self._read(f"{s.SELECT_MEMORIES} WHERE user_id = ? "
                          "ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
                          (user_id, limit, offset))
        return [s.observation_from_row(r) for r in rows]

    def apply_status_change(self, change: MemoryStatusChange) -> bool:
        """Set status/tier (and supersession links when given) of one of the user's
        memories; ``updated_at`` = ``change.at``. False when no such memory."""
        with self.transaction():
            return self._execute(
                "UPDATE agent_memories SET status = ?, tier = ?, updated_at = ?, "
                "superseded_by = COALESCE(?, superseded_by), "
                "supersedes_memory_id = COALESCE(?, supersedes_memory_id) "
                "WHERE id = ? AND user_id = ?",
                (change.status, change.tier, change.at, change.superseded_by,
                 change.supersedes_memory_id, change.memory_id, change.user_id)) > 0

    def put_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Insert or overwrite chunk rows by id."""
        if not chunks:
            return
        sql = self.dialect.upsert("source_chunks", s.CHUNK_COLUMNS, ("id",), s.CHUNK_COLUMNS[1:])
        with self.transaction():
            self._execute_many(sql, [s.chunk_to_row(c) for c in chunks])

    def get_chunks(self, user_id: str, memory_id: str) -> list[Chunk]:
        """The memory's chunks (this user's only) in source order."""
        rows = self._read(f"{s.SELECT_CHUNKS} WHERE user_id = ? AND memory_id = ? "
                          "ORDER BY event_index, char_start, id", (user_id, memory_id))
        return [s.chunk_from_row(r) for r in rows]

    def get_chunks_by_id(self, user_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """The user's chunks among ``chunk_ids``, by id (others' and missing ids left out)."""
        ids = list(dict.fromkeys(chunk_ids))
        out: dict[str, Chunk] = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            rows = self._read(f"{s.SELECT_CHUNKS} WHERE id IN ({s.marks(len(part))})", part)
            out.update((c.id, c) for r in rows if (c := s.chunk_from_row(r)).user_id == user_id)
        return out

    def record_usage(self, user_id: str, memory_ids: Sequence[str], at: str) -> None:
        """``hit_count += 1`` and ``last_used_at = at`` for each (distinct) id of the user."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return
        with self.transaction():
            owner = "user_id" if self.dialect.mysql else "+user_id"  # SQLite: use the PK
            self._execute("UPDATE agent_memories SET hit_count = hit_count + 1, last_used_at = ? "
                          f"WHERE id IN ({s.marks(len(ids))}) AND {owner} = ?", (at, *ids, user_id))

    def memory_counts_by_status_tier(self) -> list[tuple[str, str, int]]:
        """(status, tier, count) for every combination present."""
        rows = self._read("SELECT status, tier, COUNT(*) FROM agent_memories GROUP BY status, tier")
        return [(str(a), str(b), int(c)) for a, b, c in rows]

    def memory_counts(self) -> dict[str, dict[str, int]]:
        """``{"by_status": {...}, "by_tier": {...}}`` over all users."""
        out: dict[str, dict[str, int]] = {}
        for col in ("status", "tier"):
            rows = self._read(f"SELECT {col}, COUNT(*) FROM agent_memories GROUP BY {col}")
            out[f"by_{col}"] = {str(k): int(n) for k, n in rows}
        return out

    # --- memory_audit ------------------------------------------------------------------------

    def add_audit(self, memory_id: str, user_id: str, at: str, actor: str, field: str,
                  from_value: str | None, to_value: str | None, reason: str | None) -> None:
        """Append one audit row (who changed which field of a memory, when and why)."""
        with self.transaction():
            self._execute(s.INSERT_AUDIT,
                          (memory_id, user_id, at, actor, field, from_value, to_value, reason))

    def add_audits(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Issue 14: :meth:`add_audit` for many rows (its arguments, in order), one
        statement."""
        if rows:
            with self.transaction():
                self._execute_many(s.INSERT_AUDIT, rows)

    def list_audit(self, user_id: str, memory_id: str) -> list[dict[str, Any]]:
        """The memory's audit rows (this user's only), oldest first; keys = column names."""
        rows = self._read(f"{s.SELECT_AUDIT} WHERE user_id = ? AND memory_id = ? ORDER BY id",
                          (user_id, memory_id))
        return [dict(zip(s.AUDIT_COLUMNS, r, strict=True)) for r in rows]

    # --- DeadLetterStore ---------------------------------------------------------------------

    def put_dead_letter(self, letter: DeadLetter, key: str | None = None) -> bool:
        """Keep a rejected input with its reason and count it (``dead_lettered``, in the
        same transaction: the counter and the table agree). With a ``key`` (the message's
        position) a second letter under the same key changes nothing and returns False."""
        with self.transaction():
            if key is not None and self._fetch(
                    "SELECT 1 FROM dead_letter_keys WHERE letter_key = ?", (key,)):
                return False
            with closing(self._require_open().cursor()) as cur:
                cur.execute(self.dialect.sql(s.INSERT_DEAD_LETTER), s.dead_letter_to_row(letter))
                letter_id = int(cur.lastrowid)
            if key is not None:
                if not self._insert_unique("INSERT INTO dead_letter_keys (letter_key, "
                                           "dead_letter_id) VALUES (?, ?)", (key, letter_id)):
                    raise IndexConflictError(f"dead letter {key!r} written concurrently")
            self.incr(DEAD_LETTERED)  # the one dead-letter count: moves with each new row
        return True

    def dead_letter_positions(self, limit: int = 100) -> list[tuple[str, str, str]]:
        """(position, reason, payload) of keyed dead letters, newest first."""
        rows = self._read("SELECT k.letter_key, d.reason, d.payload FROM dead_letter_keys k "
                          "JOIN dead_letters d ON d.id = k.dead_letter_id "
                          "ORDER BY d.id DESC LIMIT ?", (limit,))
        return [(_text(a), str(b), str(c)) for a, b, c in rows]

    def count_dead_letters(self) -> int:
        """All dead letters."""
        return self._scalar("SELECT COUNT(*) FROM dead_letters")

    def list_dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        """The most recent dead letters, newest first."""
        rows = self._read(f"{s.SELECT_DEAD_LETTERS} ORDER BY id DESC LIMIT ?", (limit,))
        return [s.dead_letter_from_row(r) for r in rows]


def _text(value: Any) -> str:
    """An id column as text (MySQL returns VARBINARY columns as bytes)."""
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)

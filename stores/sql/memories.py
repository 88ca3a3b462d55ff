"""The memories of a SQL store (MemoryStore): the ``agent_memories`` rows with their
status, tier and usage, and the ``source_chunks`` rows recall quotes from."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from breadcrumb.stores.sql import chunk_text, packed
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import Row, SqlDatabase, TenantMismatchError, id_text
from breadcrumb.topics.records import Chunk, MemoryStatusChange, Observation

#: :meth:`SqlMemories.record_usage`'s statement: it changes only the usage counters
USAGE_UPDATE = "UPDATE agent_memories SET hit_count = hit_count + 1, last_used_at = ? "
_USER = s.CHUNK_COLUMNS.index("user_id")


class SqlMemories:
    """The ``agent_memories`` table: derived rows upserted, lifecycle columns kept.

    ``MemoryStore`` (:mod:`stores.ports`) pairs a memory with its chunk rows: ``put_chunks``
    and ``get_chunks`` (and ``get_chunks_by_id``, ``KeptChunkRows``) are those of the
    store's :class:`SqlChunks`, named here so the port is one object.

    Why so many methods: it is the ``MemoryRows`` port (``stores.ports.tables``): the
    memory rows one at a time and many at once, whole rows, pages, status changes, usage
    and counts, and the three chunk-row calls the port pairs with them; each is one
    statement.
    """

    def __init__(self, db: SqlDatabase, chunks: SqlChunks) -> None:
        self.db = db
        self.chunks = chunks
        # the query hints (a JSON list of every exact value of the range, the row's longest
        # column) and the metadata stored compressed on SQLite (issue 49); MySQL keeps text
        self._hints = packed.packer(db.dialect.mysql)

    def transaction(self) -> AbstractContextManager[None]:
        """The store's transaction: memory writes grouped in one (``Transactional``)."""
        return self.db.transaction()

    def upsert_memory(self, observation: Observation, at: str | None = None) -> None:
        """Insert or re-derive a memory; idempotent for the same observation.

        On an existing id the derived fields (summary, source range, tags, hints, facts,
        metadata, importance, ...) are overwritten; ``status``, ``tier``, ``superseded_by``,
        ``hit_count`` and ``last_used_at`` are kept because the lifecycle owns them.
        ``updated_at`` is ``at`` or, for replay determinism, the observation's ``created_at``.
        Raises :class:`TenantMismatchError` if the id belongs to another user.
        """
        row = s.observation_to_row(observation, at or observation.created_at, self._hints)
        sql = self.db.dialect.upsert("agent_memories", s.MEMORY_COLUMNS, ("id",), s.MEMORY_DERIVED)
        with self.db.transaction():
            owner = self.db.fetch("SELECT user_id FROM agent_memories WHERE id = ?",
                                (observation.id,))
            if owner and owner[0][0] != observation.user_id:
                raise TenantMismatchError(f"memory {observation.id!r} belongs to another user")
            self.db.execute(sql, row)

    def upsert_memories(self, observations: Sequence[Observation]) -> None:
        """Issue 14: :meth:`upsert_memory` for many (a derivation batch): one owner check
        and one statement. Raises :class:`TenantMismatchError` before writing anything."""
        if not observations:
            return
        sql = self.db.dialect.upsert("agent_memories", s.MEMORY_COLUMNS, ("id",), s.MEMORY_DERIVED)
        with self.db.transaction():
            ids = list(dict.fromkeys(o.id for o in observations))
            owners: dict[str, str] = {}
            for start in range(0, len(ids), 500):
                part = ids[start:start + 500]
                owners.update((id_text(i), id_text(u)) for i, u in self.db.fetch(
                    f"SELECT id, user_id FROM agent_memories WHERE id IN ({s.marks(len(part))})",
                    part))
            for o in observations:
                if owners.setdefault(o.id, o.user_id) != o.user_id:
                    raise TenantMismatchError(f"memory {o.id!r} belongs to another user")
            self.db.execute_many(sql, [s.observation_to_row(o, o.created_at, self._hints)
                                       for o in observations])

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
                out[id_text(r[0])] = s.memory_row_dict(r)
        return out

    def _memory_rows(self, user_id: str, memory_ids: Sequence[str]) -> list[Row]:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return []
        # Look up by primary key and check the owner here: with ``user_id = ?`` in the WHERE
        # clause SQLite picks the (user_id, status) index and scans every memory of the user.
        rows = self.db.read(f"{s.SELECT_MEMORIES} WHERE id IN ({s.marks(len(ids))})", ids)
        by_id = {id_text(r[0]): r for r in rows if id_text(r[1]) == user_id}
        return [by_id[i] for i in ids if i in by_id]

    def list_memories(self, user_id: str, limit: int = 100, offset: int = 0) -> list[Observation]:
        """A page of the user's memories, newest ``created_at`` first (ties by id)."""
        rows = self.db.read(f"{s.SELECT_MEMORIES} WHERE user_id = ? "
                          "ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
                          (user_id, limit, offset))
        return [s.observation_from_row(r) for r in rows]

    def apply_status_change(self, change: MemoryStatusChange) -> bool:
        """Set status/tier (and supersession links when given) of one of the user's
        memories; ``updated_at`` = ``change.at``. False when no such memory."""
        with self.db.transaction():
            return self.db.execute(
                "UPDATE agent_memories SET status = ?, tier = ?, updated_at = ?, "
                "superseded_by = COALESCE(?, superseded_by), "
                "supersedes_memory_id = COALESCE(?, supersedes_memory_id) "
                "WHERE id = ? AND user_id = ?",
                (change.status, change.tier, change.at, change.superseded_by,
                 change.supersedes_memory_id, change.memory_id, change.user_id)) > 0

    def record_usage(self, user_id: str, memory_ids: Sequence[str], at: str) -> None:
        """``hit_count += 1`` and ``last_used_at = at`` for each (distinct) id of the user."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return
        with self.db.transaction():
            self.db.execute(*self.usage_statement(user_id, ids, at))

    def usage_statement(self, user_id: str, ids: Sequence[str], at: str
                        ) -> tuple[str, tuple[Any, ...]]:
        """:meth:`record_usage`'s statement and parameters for distinct ``ids``."""
        owner = s.owner_only(self.db.dialect.mysql)  # SQLite: by the primary key
        return (USAGE_UPDATE + f"WHERE id IN ({s.marks(len(ids))}) AND {owner} = ?",
                (at, *ids, user_id))

    def memory_counts_by_status_tier(self) -> list[tuple[str, str, int]]:
        """(status, tier, count) for every combination present."""
        rows = self.db.read("SELECT status, tier, COUNT(*) FROM agent_memories "
                            "GROUP BY status, tier")
        return [(str(a), str(b), int(c)) for a, b, c in rows]

    def memory_counts(self) -> dict[str, dict[str, int]]:
        """``{"by_status": {...}, "by_tier": {...}}`` over all users."""
        out: dict[str, dict[str, int]] = {}
        for col in ("status", "tier"):
            rows = self.db.read(f"SELECT {col}, COUNT(*) FROM agent_memories GROUP BY {col}")
            out[f"by_{col}"] = {str(k): int(n) for k, n in rows}
        return out

    # --- the memory's chunk rows (MemoryStore names them) ---------------------------------

    def put_chunks(self, chunks: Sequence[Chunk]) -> None:
        """:meth:`SqlChunks.put_chunks`."""
        self.chunks.put_chunks(chunks)

    def get_chunks(self, user_id: str, memory_id: str) -> list[Chunk]:
        """:meth:`SqlChunks.get_chunks`."""
        return self.chunks.get_chunks(user_id, memory_id)

    def get_chunks_by_id(self, user_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """:meth:`SqlChunks.get_chunks_by_id`."""
        return self.chunks.get_chunks_by_id(user_id, chunk_ids)


class SqlChunks:
    """The ``source_chunks`` table: a memory's passages, by id and in source order; a
    chunk's text is stored once, in its raw event (``stores.sql.chunk_text``, issue 49)."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    def put_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Insert or overwrite chunk rows by id; a chunk whose event is stored is kept as
        offsets into it (:mod:`stores.sql.chunk_text`)."""
        if not chunks:
            return
        sql = self.db.dialect.upsert("source_chunks", s.CHUNK_COLUMNS, ("id",), s.CHUNK_COLUMNS[1:])
        with self.db.transaction():  # a view where the event holds the text (issue 49)
            self.db.execute_many(sql, chunk_text.chunk_rows(self.db, chunks))

    def get_chunks(self, user_id: str, memory_id: str) -> list[Chunk]:
        """The memory's chunks (this user's only) in source order."""
        rows = self.db.read(f"{s.SELECT_CHUNKS} WHERE user_id = ? AND memory_id = ? "
                          "ORDER BY event_index, char_start, id", (user_id, memory_id))
        return chunk_text.with_texts(self.db, rows)

    def get_chunks_by_id(self, user_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """The user's chunks among ``chunk_ids``, by id (others' and missing ids left out)."""
        ids = list(dict.fromkeys(chunk_ids))
        out: dict[str, Chunk] = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            rows = self.db.read(f"{s.SELECT_CHUNKS} WHERE id IN ({s.marks(len(part))})", part)
            mine = [r for r in rows if id_text(r[_USER]) == user_id]
            out.update((c.id, c) for c in chunk_text.with_texts(self.db, mine))
        return out

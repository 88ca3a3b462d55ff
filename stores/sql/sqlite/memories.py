"""Memories (and chunk rows) read by recall, kept between two writes of the embedded store.

A recall reads the rows of 40-60 candidate memories by id (``get_memories``): about
0.7 ms of SQLite at 100k memories, more when the searches before it have pushed the
pages out of the CPU caches, on every recall. The embedded store is the only writer of
its file (one owner per data dir), so the memories it read stay what the file holds until
its own write connection changes a row. Here those reads are kept and served again while
nothing was written (:class:`KeptRows`); the chunk rows whose texts recall reads instead of
the index's payloads (``query_api.recall.chunk_rows``) and the events its evidence is dated
by the same way.

Exactness: a kept memory is valid for one *write token* -- the number of commits that
changed rows, and the rows the write connection changed (``total_changes``: any statement,
committed or not) less those of recall-usage updates. The usage counters
(``hit_count``, ``last_used_at``) are not part of a memory as read here, and recall writes
them five times a second. A read keeps its memories only when the token did not move
while it ran; any other changed row moves it, so a memory is never served across a write
(a statement this module does not know moves it too). The thread holding the writer's
lock reads SQL as before (it must see its own open transaction). A memory is served only
to its own user. At most :data:`MEMORY_CACHE_MAX` are kept (cleared when reached).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from breadcrumb.stores.sql.core import SqlDatabase
from breadcrumb.stores.sql.memories import SqlChunks, SqlMemories
from breadcrumb.stores.sql.sqlite.database import SqliteDatabase, TransactionListener
from breadcrumb.topics.records import Chunk, Event, Observation

T = TypeVar("T")

MEMORY_CACHE_MAX = 20_000


class KeptRows(TransactionListener):
    """Memories, chunk rows and events read since the last write, each valid for one write
    token (see the module docstring); the SQLite memories, chunks and events read
    through it."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db
        self.memories: dict[str, Observation] = {}
        self.chunks: dict[str, Chunk] = {}  # chunk rows: also read by every recall
        self.events: dict[str, Event] = {}  # "user\0event id" -> the evidence's events
        self._token: tuple[int, int] = (-1, -1)
        self._lock = threading.Lock()
        self._commits = 0  # commits that changed more than usage counters
        self._usage_rows = 0  # rows changed by USAGE_UPDATE statements
        self._committed_changes = -1

    def _changes(self) -> int:
        changes = self.db.total_changes()
        return -1 if changes < 0 else changes - self._usage_rows

    def _write_token(self) -> tuple[int, int]:
        return (self._commits, self._changes())

    def usage(self, run: Callable[[], int]) -> int:
        """Run a usage-counter update (``run`` returns the rows it changed): those rows
        do not move the write token."""
        with self._lock:  # the rows it changes and their count move together
            changed = run()
            self._usage_rows += max(changed, 0)
        return changed

    def committed(self) -> None:
        self._moved(reopened=False)

    def reset(self) -> None:
        self._moved(reopened=True)

    def _moved(self, reopened: bool) -> None:
        """After every commit; ``reopened``: the connection is closed or the tables are
        dropped or data erased (every kept row goes)."""
        with self._lock:
            changes = self._changes()
            if reopened or changes != self._committed_changes:
                self._commits += 1
                self._committed_changes = changes
                self._forget()

    def _forget(self) -> None:
        self.memories.clear()
        self.chunks.clear()
        self.events.clear()

    def read(self, kept: dict[str, T], ids: list[str],
             read: Callable[[list[str]], dict[str, T]]) -> dict[str, T]:
        """``ids`` from ``kept`` while the write token stands, the others through ``read``
        (kept when the token did not move while it ran)."""
        with self._lock:
            token = self._write_token()
            if token != self._token:
                self._forget()
                self._token = token
            found = {i: row for i in ids if (row := kept.get(i)) is not None}
        missing = [i for i in ids if i not in found]
        if missing:
            fresh = read(missing)
            found.update(fresh)
            with self._lock:
                if self._write_token() == token == self._token:
                    if len(kept) + len(fresh) > MEMORY_CACHE_MAX:
                        kept.clear()
                    kept.update(fresh)
        return found


class SqliteChunks(SqlChunks):
    """``get_chunks_by_id`` served from the rows read since the last write."""

    def __init__(self, db: SqlDatabase, kept: KeptRows) -> None:
        super().__init__(db)
        self.kept = kept

    def get_chunks_by_id(self, user_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        if self.db.writer_owned():
            return super().get_chunks_by_id(user_id, chunk_ids)
        ids = list(dict.fromkeys(chunk_ids))
        found = self.kept.read(self.kept.chunks, ids, lambda missing: super(
            SqliteChunks, self).get_chunks_by_id(user_id, missing))
        return {i: c for i in ids if (c := found.get(i)) is not None and c.user_id == user_id}


class SqliteMemories(SqlMemories):
    """``get_memories`` served from the rows read since the last write; usage updates
    that do not move the write token (``KeptChunkRows``: recall reads chunk texts here).

    Why so many methods: those of SqlMemories (the ``MemoryRows`` port, whose reason its
    docstring gives); it overrides two of them.
    """

    #: recall reads chunk texts here rather than from the index's payloads (cheaper kept)
    KEEPS_ROWS = True

    def __init__(self, db: SqlDatabase, chunks: SqlChunks, kept: KeptRows) -> None:
        super().__init__(db, chunks)
        self.kept = kept

    def get_memories(self, user_id: str, memory_ids: Sequence[str]) -> list[Observation]:
        if self.db.writer_owned():
            return super().get_memories(user_id, memory_ids)
        ids = list(dict.fromkeys(memory_ids))
        found = self.kept.read(self.kept.memories, ids, lambda missing: {
            m.id: m for m in super(SqliteMemories, self).get_memories(user_id, missing)})
        return [m for i in ids if (m := found.get(i)) is not None and m.user_id == user_id]

    def record_usage(self, user_id: str, memory_ids: Sequence[str], at: str) -> None:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return
        sql, params = self.usage_statement(user_id, ids, at)
        with self.db.transaction():
            self.kept.usage(lambda: self.db.execute(sql, params))

"""Memories (and chunk rows) read by recall, kept between two writes of the embedded store.

A recall reads the rows of 40-60 candidate memories by id (``get_memories``): about
0.7 ms of SQLite at 100k memories, more when the searches before it have pushed the
pages out of the CPU caches, on every recall. The embedded store is the only writer of
its file (one owner per data dir), so the memories it read stay what the file holds until
its own write connection changes a row. Here those reads are kept and served again while
nothing was written; the chunk rows whose texts recall reads instead of the index's payloads
(``query_api.recall.chunk_rows``) and the events its evidence is dated by the same way.

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
from typing import Any, TypeVar

from breadcrumb.stores.sql.base import SqlStore
from breadcrumb.topics.records import Chunk, Event, Observation

T = TypeVar("T")

MEMORY_CACHE_MAX = 20_000
#: ``SqlStore.record_usage``'s statement: it changes only the usage counters
USAGE_UPDATE = "UPDATE agent_memories SET hit_count = hit_count + 1, last_used_at = ? "


class CachedMemoriesMixin(SqlStore):
    """``get_memories``, ``get_chunks_by_id`` and ``get_events`` of
    :class:`~stores.sql.base.SqlStore` served from the rows read since the last write
    (mixed in before it)."""

    #: recall reads chunk texts here rather than from the index's payloads (cheaper kept)
    KEEPS_ROWS = True

    def _init_memory_cache(self) -> None:
        self._kept: dict[str, Observation] = {}
        self._kept_chunks: dict[str, Chunk] = {}  # chunk rows: also read by every recall
        self._kept_events: dict[str, Event] = {}  # "user\0event id" -> the evidence's events
        self._kept_token: tuple[int, int] = (-1, -1)
        self._kept_lock = threading.Lock()
        self._commits = 0  # commits that changed more than usage counters
        self._usage_rows = 0  # rows changed by USAGE_UPDATE statements
        self._committed_changes = -1

    def _changes(self) -> int:
        conn = self._conn
        return -1 if conn is None else int(conn.total_changes) - self._usage_rows

    def _write_token(self) -> tuple[int, int]:
        return (self._commits, self._changes())

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        if not sql.startswith(USAGE_UPDATE):
            return super()._execute(sql, params)
        with self._kept_lock:  # the rows it changes and their count move together
            changed = super()._execute(sql, params)
            self._usage_rows += max(changed, 0)
        return changed

    def _memories_committed(self, reopened: bool = False) -> None:
        """After every commit; ``reopened``: the connection is closed or the tables
        are dropped (every kept memory goes)."""
        with self._kept_lock:
            changes = self._changes()
            if reopened or changes != self._committed_changes:
                self._commits += 1
                self._committed_changes = changes
                self._forget_kept()

    def get_memories(self, user_id: str, memory_ids: Sequence[str]) -> list[Observation]:
        if self._writer_owned():
            return super().get_memories(user_id, memory_ids)
        ids = list(dict.fromkeys(memory_ids))
        found = self._kept_read(self._kept, ids, lambda missing: {
            m.id: m for m in super(CachedMemoriesMixin, self).get_memories(user_id, missing)})
        return [m for i in ids if (m := found.get(i)) is not None and m.user_id == user_id]

    def get_chunks_by_id(self, user_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        if self._writer_owned():
            return super().get_chunks_by_id(user_id, chunk_ids)
        ids = list(dict.fromkeys(chunk_ids))
        found = self._kept_read(self._kept_chunks, ids, lambda missing: super(
            CachedMemoriesMixin, self).get_chunks_by_id(user_id, missing))
        return {i: c for i in ids if (c := found.get(i)) is not None and c.user_id == user_id}

    def get_events(self, user_id: str, event_ids: Sequence[str]) -> dict[str, Event]:
        if self._writer_owned():
            return super().get_events(user_id, event_ids)
        keys = {f"{user_id}\0{i}": i for i in dict.fromkeys(event_ids)}
        found = self._kept_read(self._kept_events, list(keys), lambda missing: {
            f"{user_id}\0{e.event_id}": e for e in super(CachedMemoriesMixin, self).get_events(
                user_id, [keys[k] for k in missing]).values()})
        return {keys[k]: e for k in keys if (e := found.get(k)) is not None}

    def _forget_kept(self) -> None:
        self._kept.clear()
        self._kept_chunks.clear()
        self._kept_events.clear()

    def _kept_read(self, kept: dict[str, T], ids: list[str],
                   read: Callable[[list[str]], dict[str, T]]) -> dict[str, T]:
        """``ids`` from ``kept`` while the write token stands, the others through ``read``
        (kept when the token did not move while it ran)."""
        with self._kept_lock:
            token = self._write_token()
            if token != self._kept_token:
                self._forget_kept()
                self._kept_token = token
            found = {i: row for i in ids if (row := kept.get(i)) is not None}
        missing = [i for i in ids if i not in found]
        if missing:
            fresh = read(missing)
            found.update(fresh)
            with self._kept_lock:
                if self._write_token() == token == self._kept_token:
                    if len(kept) + len(fresh) > MEMORY_CACHE_MAX:
                        kept.clear()
                    kept.update(fresh)
        return found

"""Issue 14: what a derivation batch's lifecycle hooks read, read once.

:class:`BatchReads` lives for one :meth:`LifecycleService.batch
<streams.lifecycle.LifecycleService.batch>` (one thread, one SQL transaction):

* a new memory's events come from the batch's own raw events (``stores.raw_batch``: held in
  memory when the batch saw the whole range) for a user with no archived range — the
  archive-aware read is then the hot read — else through the archive;
* memory rows are read once (the batch's memories with one ``IN`` read, after they were
  written) and kept as the hooks write them: a status or metadata change is applied to the
  kept row as its SQL statement applies it; an archive or tombstone drops it. Only when
  every memory of the batch was written before its hooks run (``keep_rows``): a row read
  before its memory is (re-)written would be stale.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from breadcrumb.topics.records import Event


class BatchReads:
    """Reads of one batch's lifecycle hooks (see the module docstring)."""

    def __init__(self, store: Any, tables: Any, archive: Any, hot: Any,
                 keep_rows: bool = True) -> None:
        self.store = store  # SqlStore
        self.tables = tables  # LifecycleTables
        self.archive = archive  # the archive-aware raw events
        self.hot = hot  # the batch's raw events (None: read through the archive)
        self._archived: dict[str, bool] = {}
        self._rows: dict[tuple[str, str], dict[str, Any]] = {}
        self.keep_rows = keep_rows  # False: memories may still be written (no row kept)
        self.row_reads = 0  # memory-row statements (tests, benches)

    def events(self, user_id: str, thread_id: str, start: int, end: int) -> list[Event]:
        if self.hot is not None:
            if user_id not in self._archived:
                self._archived[user_id] = self.tables.has_archived(user_id)
            if not self._archived[user_id]:
                return list(self.hot.get_range(user_id, thread_id, start, end))
        return list(self.archive.get_range(user_id, thread_id, start, end))

    def prefetch(self, memories: Iterable[tuple[str, str]]) -> None:
        """Rows of (user_id, memory_id) pairs, one read per user."""
        by_user: dict[str, list[str]] = {}
        for user_id, mid in memories:
            if (user_id, mid) not in self._rows:
                by_user.setdefault(user_id, []).append(mid)
        for user_id, mids in by_user.items():
            self.row_reads += 1
            for mid, row in self.store.get_memory_rows(user_id, mids).items():
                self._rows[(user_id, mid)] = row

    def row(self, user_id: str, mid: str) -> dict[str, Any] | None:
        """The memory's row (a missing one is not remembered: it may be written later)."""
        key = (user_id, mid)
        if not self.keep_rows:
            self.row_reads += 1
            row: dict[str, Any] | None = self.store.get_memory_row(user_id, mid)
            return row
        if key not in self._rows:
            self.row_reads += 1
            row = self.store.get_memory_row(user_id, mid)
            if row is None:
                return None
            self._rows[key] = row
        return self._rows[key]

    def update(self, user_id: str, mid: str, values: dict[str, Any]) -> None:
        """The hooks wrote these columns of the memory (as SQL stores them: JSON columns
        go through JSON, so the kept row equals a fresh read)."""
        row = self._rows.get((user_id, mid))
        if row is not None:
            self._rows[(user_id, mid)] = {**row, **json.loads(json.dumps(values))}

    def forget(self, user_id: str, mid: str) -> None:
        """The hooks are writing this memory (or its user's archived ranges)."""
        self._rows.pop((user_id, mid), None)

    def forget_archive(self, user_id: str) -> None:
        self._archived.pop(user_id, None)

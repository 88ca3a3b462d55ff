"""Issue 14: what a derivation batch's lifecycle hooks read, read once.

:class:`BatchReads` lives for one :meth:`LifecycleService.batch
<streams.lifecycle.service.LifecycleService.batch>` (one thread, one SQL transaction):

* a new memory's events come from the batch's own raw events (``stores.sql.raw_batch``: held in
  memory when the batch saw the whole range) for a user with no archived range — the
  archive-aware read is then the hot read — else through the archive;
* a memory's held fact keys (what ``replace_facts`` diffs against) are read with the rows,
  one ``IN`` read for the batch, and kept as the hooks replace them; the memories the
  duplicate check compares with are read once, all of one check in one statement (what it
  reads of them — summary, facts, range, created_at — the hooks never change);
* audit rows are buffered and inserted with one statement at the end of the batch (the
  hooks never read the audit trail);
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

from breadcrumb.stores.ports import RawEventStore
from breadcrumb.stores.ports.tables import Store
from breadcrumb.stores.sql.lifecycle import LifecycleTables
from breadcrumb.topics.records import Event, Fact, Observation, SourceRange


class BatchReads:
    """Reads of one batch's lifecycle hooks (see the module docstring)."""

    def __init__(self, store: Store, tables: LifecycleTables, archive: RawEventStore,
                 hot: RawEventStore | None, keep_rows: bool = True) -> None:
        self.store = store  # memory rows, audit
        self.tables = tables
        self.archive = archive  # the archive-aware raw events
        self.hot = hot  # the batch's raw events (None: read through the archive)
        self._archived: dict[str, bool] = {}
        self._rows: dict[tuple[str, str], dict[str, Any]] = {}
        self.keep_rows = keep_rows  # False: memories may still be written (no row kept)
        self.row_reads = 0  # memory-row statements (tests, benches)
        self._fact_keys: dict[str, list[str]] = {}  # memory id -> its held fact keys
        self.audits: list[tuple[Any, ...]] = []  # add_audit arguments, in order
        self._built: dict[tuple[str, str], tuple[dict[str, Any], Observation]] = {}

    def events(self, user_id: str, thread_id: str, start: int, end: int) -> list[Event]:
        if self.hot is not None:
            if user_id not in self._archived:
                self._archived[user_id] = self.tables.archived.has_archived(user_id)
            if not self._archived[user_id]:
                return list(self.hot.get_range(user_id, thread_id, start, end))
        return list(self.archive.get_range(user_id, thread_id, start, end))

    def prefetch(self, memories: Iterable[tuple[str, str]],
                 others: Iterable[tuple[str, str]] = ()) -> None:
        """Rows of (user_id, memory_id) pairs, one read per user, with the fact keys each
        holds; ``others``: memories the hooks may read (their rows only, kept as any read
        row is: only with ``keep_rows``)."""
        mine = list(memories)
        by_user: dict[str, list[str]] = {}
        for user_id, mid in [*mine, *(others if self.keep_rows else ())]:
            if (user_id, mid) not in self._rows:
                by_user.setdefault(user_id, []).append(mid)
        for user_id, mids in by_user.items():
            self.row_reads += 1
            for mid, row in self.store.memories.get_memory_rows(user_id, list(dict.fromkeys(mids))
                                                       ).items():
                self._rows[(user_id, mid)] = row
        mids = [m for _u, m in dict.fromkeys(mine) if m not in self._fact_keys]
        if mids and self.keep_rows:
            self._fact_keys.update(self.tables.facts.fact_keys_of(mids))

    def fact_keys(self, mid: str) -> list[str] | None:
        """The memory's held fact keys when known (None: ``replace_facts`` reads them)."""
        return self._fact_keys.get(mid)

    def replaced_facts(self, mid: str, keys: list[str]) -> None:
        """``replace_facts`` left the memory holding these keys."""
        if self.keep_rows:
            self._fact_keys[mid] = keys

    def memories(self, user_id: str, mids: list[str]) -> dict[str, Observation]:
        """The user's memories among ``mids`` by id, built from their rows (read in one
        statement for those not kept, and then kept): what the duplicate check reads of
        them (summary, facts, range, created_at) is as a fresh read gives it."""
        if self.keep_rows:
            todo = [m for m in mids if (user_id, m) not in self._rows]
            if todo:
                self.row_reads += 1
                for mid, row in self.store.memories.get_memory_rows(user_id, todo).items():
                    self._rows[(user_id, mid)] = row
            rows = {m: self._rows[(user_id, m)] for m in mids if (user_id, m) in self._rows}
            return {m: self._memory(user_id, m, row) for m, row in rows.items()}
        rows = self.store.memories.get_memory_rows(user_id, mids)
        return {m: _memory(row) for m, row in rows.items()}

    def _memory(self, user_id: str, mid: str, row: dict[str, Any]) -> Observation:
        """``_memory(row)`` of a kept row, built once for that row (a write replaces the
        kept row, so a changed memory is built again)."""
        built = self._built.get((user_id, mid))
        if built is None or built[0] is not row:
            built = self._built[(user_id, mid)] = (row, _memory(row))
        return built[1]

    def flush_audits(self) -> None:
        """Insert the buffered audit rows (inside the batch's transaction)."""
        audits, self.audits = self.audits, []
        if audits:
            self.store.audit.add_audits(audits)

    def row(self, user_id: str, mid: str) -> dict[str, Any] | None:
        """The memory's row (a missing one is not remembered: it may be written later)."""
        key = (user_id, mid)
        if not self.keep_rows:
            self.row_reads += 1
            row: dict[str, Any] | None = self.store.memories.get_memory_row(user_id, mid)
            return row
        if key not in self._rows:
            self.row_reads += 1
            row = self.store.memories.get_memory_row(user_id, mid)
            if row is None:
                return None
            self._rows[key] = row
        return self._rows[key]

    def kept(self, user_id: str, mid: str) -> dict[str, Any] | None:
        """The memory's kept row (None: not kept; no read)."""
        return self._rows.get((user_id, mid)) if self.keep_rows else None

    def update(self, user_id: str, mid: str, values: dict[str, Any]) -> None:
        """The hooks wrote these columns of the memory (as SQL stores them: JSON columns
        go through JSON, so the kept row equals a fresh read)."""
        row = self._rows.get((user_id, mid))
        if row is not None:
            self._rows[(user_id, mid)] = {**row, **json_copy(values)}

    def forget(self, user_id: str, mid: str) -> None:
        """The hooks are writing this memory (or its user's archived ranges)."""
        self._rows.pop((user_id, mid), None)
        self._fact_keys.pop(mid, None)

    def forget_archive(self, user_id: str) -> None:
        self._archived.pop(user_id, None)


_SCALARS = (str, int, float, bool, type(None))


def json_copy(value: Any) -> Any:
    """``json.loads(json.dumps(value))``: what a JSON column gives back (tuples become
    lists). Copied directly when made of JSON's own types (dicts with ``str`` keys, lists,
    tuples, scalars), which is ~10x faster than encoding (a memory's metadata grows with
    each duplicate merged into it); anything else goes through ``json``."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list or kind is tuple:
        return [json_copy(v) for v in value]
    if kind is dict and all(type(k) is str for k in value):
        return {k: json_copy(v) for k, v in value.items()}
    return json.loads(json.dumps(value))


def _memory(row: dict[str, Any]) -> Observation:
    """The memory of a row of ``SqlStore.get_memory_rows`` (as ``get_memory`` reads it)."""
    return Observation(
        id=row["id"], user_id=row["user_id"], project_id=row["project_id"], kind=row["kind"],
        summary=row["summary"], source_range=SourceRange(
            row["source_thread_id"], int(row["source_start_index"]),
            int(row["source_end_index"])),
        tags=tuple(row["tags"]), query_hints=tuple(row["query_hints"]),
        retrieve_when=row["retrieve_when"], importance=float(row["importance"]),
        status=row["status"], tier=row["tier"], supersedes_memory_id=row["supersedes_memory_id"],
        facts=tuple(Fact.from_dict(f) for f in row["facts"]), metadata=row["metadata"],
        created_at=row["created_at"])

"""The lifecycle's reads and writes through one thread's derivation batch (issue 14).

:class:`BatchScope` is the base of :class:`~streams.lifecycle.service.LifecycleService`: every
step that applies a change reads a memory's row, events and lifecycle tables and writes
its audit rows and vector payload through here. Outside a :meth:`BatchScope.batch` block
each goes straight to its store; inside one, reads come from the batch's
:class:`~streams.lifecycle.reads.BatchReads`, SQL writes through
:class:`~stores.sql.facts_batch.BatchedLifecycleTables`, and payload updates are deferred
to the end of the block, one per memory.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from breadcrumb.stores.ports import BatchedPayloads, RawEventStore, VectorIndex
from breadcrumb.stores.ports.tables import Store
from breadcrumb.stores.sql.facts_batch import BatchedLifecycleTables
from breadcrumb.stores.sql.lifecycle import LifecycleTables
from breadcrumb.stores.vectors.qdrant_common import PointNotFoundError
from breadcrumb.streams.lifecycle.reads import BatchReads
from breadcrumb.topics.records import Event

log = logging.getLogger(__name__)
#: Issue 14: a batch reads the rows of at most this many memories holding its fact keys
#: (a user) ahead; the hooks read those they need one at a time beyond it.
PREFETCH_HOLDERS = 500


class BatchScope:
    """A memory's row, events, lifecycle tables, audit and payload, read and written
    directly or through this thread's batch."""

    def __init__(self, store: Store, tables: LifecycleTables, index: VectorIndex,
                 raw: RawEventStore) -> None:
        self.store = store  # memory rows, audit
        self.tables = tables
        self.index = index
        self.raw = raw
        self.errors: Counter[str] = Counter()  # visible in tests and stats
        self._local = threading.local()  # .payloads: this thread's deferred payloads (batch)

    @contextmanager
    def batch(self, raw: RawEventStore | None = None,
              memories: Iterable[tuple[str, str]] | None = None,
              fact_keys: dict[str, Iterable[str]] | None = None) -> Iterator[None]:
        """Defer this thread's vector payload updates to the end of the block (a derivation
        batch): each memory's payload is set once with its final status and tier, memories
        (and chunks) sharing the same values in one update. SQL is written as before; on
        an exception no payload is written (the caller's transaction rolls back).

        Issue 14: ``raw`` (the batch's raw events) and ``memories`` ((user_id, id) of its
        memories, already written: their rows are read at once and memory rows are kept
        until the hooks write them; None: no memory row is kept) feed
        :class:`~streams.lifecycle.reads.BatchReads`; ``fact_keys`` (each user's fact keys
        of those memories): on MySQL read at once with the memories holding them, whose rows
        and lifecycle rows are read with the batch's (up to ``PREFETCH_HOLDERS`` a user)."""
        if getattr(self._local, "payloads", None) is not None:  # the outer block writes
            yield
            return
        keep = memories is not None
        mine = list(memories or ())
        self._local.payloads = {}
        self._local.reads = BatchReads(self.store, self.tables, self.raw, raw, keep_rows=keep)
        self._local.tables = BatchedLifecycleTables(self.tables, self.store, defer_rows=keep,
                                                    kept_row=self._local.reads.kept)
        try:
            holders = self._holders(fact_keys or {})
            self._local.reads.prefetch(mine, holders)
            self._local.tables.prefetch(mid for _user, mid in [*mine, *holders])
            yield
            self._local.reads.flush_audits()
            self._local.tables.flush()
            pending: dict[str, dict[str, Any]] = self._local.payloads
        finally:
            self._local.payloads = self._local.reads = self._local.tables = None
        self._write_payloads(pending)

    def _holders(self, fact_keys: dict[str, Iterable[str]]) -> list[tuple[str, str]]:
        """(user, memory id) of the memories holding the batch's fact keys (read at once;
        a user with more than ``PREFETCH_HOLDERS`` of them: none, read when needed)."""
        found = self._local.tables.prefetch_facts(fact_keys)
        return [(user_id, mid) for user_id, mids in found.items()
                if len(mids) <= PREFETCH_HOLDERS for mid in sorted(mids)]

    def _reads(self) -> BatchReads | None:
        """This thread's batch reads (None outside a batch)."""
        reads: BatchReads | None = getattr(self._local, "reads", None)
        return reads

    def _events(self, user_id: str, thread_id: str, start: int, end: int) -> list[Event]:
        reads = self._reads()
        if reads is not None:
            return reads.events(user_id, thread_id, start, end)
        return list(self.raw.get_range(user_id, thread_id, start, end))

    def _row(self, user_id: str, mid: str) -> dict[str, Any] | None:
        reads = self._reads()
        if reads is not None:
            return reads.row(user_id, mid)
        row: dict[str, Any] | None = self.store.memories.get_memory_row(user_id, mid)
        return row

    def _changed(self, user_id: str, mid: str, values: dict[str, Any]) -> None:
        reads = self._reads()
        if reads is not None:
            reads.update(user_id, mid, values)

    def _tables(self) -> LifecycleTables:
        """The lifecycle tables, through this thread's batch (``stores.sql.facts_batch``)."""
        batched = self._batched()
        return self.tables if batched is None else batched.view

    def _batched(self) -> BatchedLifecycleTables | None:
        """This thread's batch of the lifecycle tables (None outside a batch)."""
        batched: BatchedLifecycleTables | None = getattr(self._local, "tables", None)
        return batched

    def _audit(self, *row: Any) -> None:
        """``store.add_audit(*row)``, or at the end of the batch in one statement."""
        reads = self._reads()
        if reads is not None:
            reads.audits.append(row)
        else:
            self.store.audit.add_audit(*row)

    def _forget(self, user_id: str, mid: str) -> None:
        reads = self._reads()
        if reads is not None:
            reads.forget(user_id, mid)

    def _payload(self, memory_id: str, values: dict[str, Any]) -> None:
        deferred: dict[str, dict[str, Any]] | None = getattr(self._local, "payloads", None)
        if deferred is not None:
            deferred.setdefault(memory_id, {}).update(values)
            return
        try:
            self.index.set_memory_payload(memory_id, values)
        except PointNotFoundError:
            self.errors["missing_point"] += 1
            log.warning("memory %s has no vector point; payload not updated", memory_id)

    def _write_payloads(self, pending: dict[str, dict[str, Any]]) -> None:
        if not pending:
            return
        index = self.index
        if not isinstance(index, BatchedPayloads):  # no batch call: one update per memory
            for memory_id, values in pending.items():
                self._payload(memory_id, values)
            return
        groups: dict[tuple[tuple[str, Any], ...], list[str]] = {}
        for memory_id, values in pending.items():
            groups.setdefault(tuple(sorted(values.items())), []).append(memory_id)
        missing = index.set_memory_payloads([(ids, dict(values)) for values, ids in groups.items()])
        for memory_id in missing:
            self.errors["missing_point"] += 1
            log.warning("memory %s has no vector point; payload not updated", memory_id)

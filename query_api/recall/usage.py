"""Recall hits written off the answer's path, coalesced into one write per short window.

Every answered recall counts a use of its top memories (``hit_count``, ``last_used_at``:
tier promotion reads them). One write transaction per recall costs the store a commit
each time, waits for the writer's lock behind a derivation batch, and makes every reader
connection drop its page cache (SQLite re-reads pages changed since its last read). The
:class:`UsageWriter` keeps the uses of a window (``linger_s``, 0.2 s by default) and
writes them in one transaction, in order; a memory used by three recalls of one window
gains three hits, and ``last_used_at`` is the newest use's. :meth:`flush` writes what is
pending at once and waits for it (tests, shutdown). A failed write is counted and logged,
never raised into a recall.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from breadcrumb.stores.ports import MemoryStore, Transactional

log = logging.getLogger(__name__)

LINGER_S = 0.2

Use = tuple[str, list[str], str]  # user id, memory ids, when


def layers(uses: list[Use]) -> list[Use]:
    """The uses as ``record_usage`` calls (it adds one hit per distinct id and sets the
    time): per user, the ids used at least once, then those used at least twice, ...,
    each id stamped with its own newest use (one call per layer and time)."""
    out: list[Use] = []
    by_user: dict[str, tuple[Counter[str], dict[str, str]]] = {}
    for user, ids, at in uses:
        counts, last = by_user.setdefault(user, (Counter(), {}))
        for mid in dict.fromkeys(ids):
            counts[mid] += 1
            last[mid] = max(last.get(mid, at), at)
    for user, (counts, last) in by_user.items():
        for level in range(1, max(counts.values(), default=0) + 1):
            by_time: dict[str, list[str]] = {}
            for mid, n in counts.items():
                if n >= level:
                    by_time.setdefault(last[mid], []).append(mid)
            out += [(user, ids, at) for at, ids in by_time.items()]
    return out


class UsageWriter:
    """Coalesces recall uses and writes each window's in one transaction (one thread)."""

    def __init__(self, memories: MemoryStore, errors: Counter[str],
                 linger_s: float = LINGER_S) -> None:
        self._memories = memories
        self._errors = errors
        self._linger_s = linger_s
        self._pending: list[Use] = []
        self._lock = threading.Lock()
        self._scheduled = False
        self._now = threading.Event()  # flush asked: stop lingering
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recall-usage")

    def record(self, user_id: str, memory_ids: list[str], at: str) -> None:
        """Count one recall's use of ``memory_ids``; written within ``linger_s``."""
        with self._lock:
            self._pending.append((user_id, memory_ids, at))
            if self._scheduled:
                return
            self._scheduled = True
        self._thread.submit(self._drain, True)

    def flush(self) -> None:
        """Write every use recorded so far and wait for it."""
        self._now.set()  # a drain lingering now writes at once
        self._thread.submit(self._drain, False).result()

    def _drain(self, linger: bool) -> None:
        if linger:
            self._now.wait(self._linger_s)
        with self._lock:
            uses, self._pending = self._pending, []
            self._scheduled = False
            self._now.clear()
        if uses:
            self._write(uses)

    def _write(self, uses: list[Use]) -> None:
        try:
            with self._transaction():
                for user, ids, at in layers(uses):
                    self._memories.record_usage(user, ids, at)
        except Exception:  # counted and logged; a lost hit never fails a recall
            self._errors["usage"] += 1
            log.exception("recording usage failed (%d recalls)", len(uses))

    def _transaction(self) -> AbstractContextManager[Any]:
        memories = self._memories
        return memories.transaction() if isinstance(memories, Transactional) else nullcontext()

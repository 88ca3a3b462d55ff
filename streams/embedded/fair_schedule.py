"""Fair scheduling of the embedded log: round-robin by tenant, each thread in its order.

The runner no longer applies its log strictly in log order: a tenant's 50 MB batch would
hold every other tenant's events behind it. :class:`FairSchedule` keeps an in-memory view
of the unapplied log — (position, thread key) only, read ahead without payloads — as one
queue per thread, grouped by tenant (the user part of the thread key). Each round picks a
bounded number of entries: the budget is shared between the tenants that have work, a
tenant's share between its threads, each thread contributing its *oldest* entries; the
picked entries are interleaved tenant by tenant (the first tenant rotating), so a batch
that ends early still served every tenant.

Crash-exactness with one log and per-thread progress: what a generation has applied is

* the low-water mark ``applied_seq`` — every entry at or before it is applied, and
* for a thread that got ahead of it, ``applied_seq/<thread key>`` — every entry of that
  thread at or before that position is applied (a thread's entries are applied in order,
  so this one number per thread is exact);

both written in the same transaction as the derived rows (:meth:`FairSchedule.marks`).
After a restart the read-ahead skips exactly the entries these marks cover. A thread's mark
is dropped once the low-water mark passes it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice

from breadcrumb.stores.ports import BatchedCounters
from breadcrumb.stores.ports.tables import Counters, EventLog
from breadcrumb.streams.freshness import accepted_epoch

CURSOR = "applied_seq"
THREAD_MARK = CURSOR + "/"


@dataclass(slots=True)
class Marks:
    """What to write with a batch: the new low-water mark, thread marks to set and drop."""

    low: int
    set: dict[str, int] = field(default_factory=dict)
    drop: list[str] = field(default_factory=list)

    def write(self, derived: Counters) -> None:
        """Write them (call inside the batch's transaction): one statement for the sets and
        one for the drops when the store can (``set_counters``: a batch spread over a few
        hundred threads set as many marks, one statement each)."""
        if isinstance(derived, BatchedCounters):
            derived.set_counters([(CURSOR, self.low), *self.set.items()])
        else:
            derived.set_counter(CURSOR, self.low)
            for name, value in self.set.items():
                derived.set_counter(name, value)
        if self.drop:
            derived.drop_counters(self.drop)


def thread_marks(counters: Mapping[str, int]) -> dict[str, int]:
    """Per-thread marks (thread key → position) from a generation's counters."""
    return {name[len(THREAD_MARK):]: int(v) for name, v in counters.items()
            if name.startswith(THREAD_MARK)}


def tenant_of(key: str) -> str:
    """The tenant part of a thread key (the escaped user id)."""
    return key.partition("/")[0]


class FairSchedule:
    """The unapplied part of the log, per thread, and which entries to apply next."""

    def __init__(self, low: int, marks: Mapping[str, int], window: int = 200_000,
                 scan_chunk: int = 20_000) -> None:
        self.low = low  # every entry <= low is applied
        self.marks = dict(marks)  # thread key -> applied up to (only threads ahead of low)
        self.scanned = low  # entries <= scanned are in the queues (or applied)
        self.queues: dict[str, deque[int]] = {}  # thread key -> unapplied positions in order
        self.pending = 0  # entries in the queues
        self.window = window  # at most this many entries read ahead
        self.scan_chunk = scan_chunk
        self._turn = 0  # rotates the first tenant of each round
        self.accepted: dict[int, float | None] = {}  # position -> accepted at (epoch s)

    def scan(self, log: EventLog) -> int:
        """Read the positions appended since the last scan (keys only, at most ``window``
        entries ahead); returns how many unapplied entries were queued."""
        total = 0
        while self.pending < self.window:
            limit = min(self.scan_chunk, self.window - self.pending)
            rows = log.read_log_keys(self.scanned, limit)
            if not rows:
                break
            added = 0
            for seq, key, accepted_at in rows:
                if seq <= self.marks.get(key, 0):
                    continue  # applied before a restart, ahead of the low-water mark
                self.queues.setdefault(key, deque()).append(seq)
                self.accepted[seq] = accepted_epoch(accepted_at)
                added += 1
            self.pending += added  # before ``scanned`` moves: readers never undercount
            self.scanned = rows[-1][0]
            total += added
            if len(rows) < limit:
                break
        return total

    def pick(self, budget: int) -> list[tuple[int, str]]:
        """Up to ``budget`` (position, thread key), interleaved by tenant, each thread's in
        order: the budget is split evenly between tenants, a tenant's share between its
        threads (the thread with the oldest waiting entry first, so the low-water mark
        keeps moving); what a small tenant leaves goes to the others."""
        tenants: dict[str, list[str]] = {}
        for key in sorted(self.queues, key=lambda k: self.queues[k][0]):  # oldest head first
            tenants.setdefault(tenant_of(key), []).append(key)
        if not tenants:
            return []
        names = sorted(tenants)
        start = self._turn % len(names)
        self._turn += 1
        order = names[start:] + names[:start]
        taken: dict[str, int] = {}  # thread key -> how many of its oldest are picked
        left = budget
        while left > 0:
            before = left
            share = max(1, left // len(order))
            for tenant in order:
                left -= self._take(tenants[tenant], taken, min(share, left))
                if left <= 0:
                    break
            if left == before:
                break  # every queue is exhausted
        per_tenant: list[list[tuple[int, str]]] = []
        for tenant in order:
            mine = [(seq, key) for key in tenants[tenant]
                    for seq in islice(self.queues[key], taken.get(key, 0))]
            if mine:
                per_tenant.append(sorted(mine))
        out: list[tuple[int, str]] = []
        for i in range(max(len(p) for p in per_tenant)):
            out.extend(p[i] for p in per_tenant if i < len(p))
        return out

    def _take(self, keys: list[str], taken: dict[str, int], share: int) -> int:
        """Give ``share`` entries of one tenant out across its threads; returns how many."""
        got = 0
        while got < share:
            before = got
            live = [k for k in keys if taken.get(k, 0) < len(self.queues[k])]
            if not live:
                break
            each = max(1, (share - got) // len(live))
            for key in live:
                more = min(each, len(self.queues[key]) - taken.get(key, 0), share - got)
                taken[key] = taken.get(key, 0) + more
                got += more
                if got >= share:
                    break
            if got == before:
                break
        return got

    def marks_for(self, applied: Sequence[tuple[int, str]]) -> Marks:
        """The marks after ``applied`` (a prefix of a :meth:`pick`) is applied."""
        done: dict[str, int] = {}
        for _seq, key in applied:
            done[key] = done.get(key, 0) + 1
        heads = []
        tops: dict[str, int] = {}
        for key, queue in self.queues.items():
            n = done.get(key, 0)
            if n < len(queue):
                heads.append(queue[n])
            if n:
                tops[key] = queue[n - 1]
        low = min(heads) - 1 if heads else self.scanned
        low = max(low, self.low)
        marks = Marks(low)
        for key, top in tops.items():
            if top > low:
                marks.set[THREAD_MARK + key] = top
        for key, value in self.marks.items():
            if value <= low and THREAD_MARK + key not in marks.set:
                marks.drop.append(THREAD_MARK + key)
        return marks

    def commit(self, applied: Sequence[tuple[int, str]], marks: Marks) -> list[float | None]:
        """The batch's transaction committed: drop its entries from the queues; returns
        when each was accepted (epoch seconds, None if unknown)."""
        accepted = [self.accepted.pop(seq, None) for seq, _key in applied]
        for _seq, key in applied:
            queue = self.queues[key]
            queue.popleft()
            if not queue:
                del self.queues[key]
        self.pending -= len(applied)
        self.low = marks.low
        for name in marks.drop:
            self.marks.pop(name[len(THREAD_MARK):], None)
        for name, value in marks.set.items():
            self.marks[name[len(THREAD_MARK):]] = value
        return accepted

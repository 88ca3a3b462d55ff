"""Runtime maintenance of the vector index: build HNSW when the unindexed part grows.

Qdrant Edge runs no optimizer in the background: points written since the last
``optimize()`` sit in plain segments and are searched brute force, so recall gets
slower as memories accumulate (measured at 100k memories: see ``bench/recall.py``).
:class:`OptimizeJob` calls ``index.optimize()`` on a daemon thread once at least
``min_points`` points were written since the last run *and* no point was written
for ``idle_seconds`` (a build on a shard that an ingest burst keeps changing would
be stale at once; searches do not delay it) -- or, whatever the writes, once
``busy_points`` points are unindexed (issue 49): the unindexed points sit in a mutable
segment whose sparse and payload indexes Qdrant keeps on the heap (about 1.5 KB of
anonymous memory a point measured at 580,000 events of the store-cost bench, 1.47 GB), so
an ingest that never pauses grew the process with the data until its first idle minute.

The build does not hold the service: ``QdrantEdgeIndex.optimize()`` builds a copy
of the shard in a child process and swaps it in (``stores/vectors/edge/index_build.py``), so
searches keep answering during it and return the same points after it
(``tests/unit/stores/test_optimize_job.py``, ``tests/e2e/test_index_build_live.py``).
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger(__name__)


class Optimizable(Protocol):
    """An index that can build its search structures on demand."""

    def optimize(self) -> bool:
        """Run the optimizers; True if any segment changed."""
        ...

    def pending_writes(self) -> tuple[int, float]:
        """(points written since the last optimize, monotonic time of the last write)."""
        ...


class OptimizeJob:
    """Calls ``index.optimize()`` when enough points are unindexed and writes are idle."""

    def __init__(
        self,
        index: Optimizable,
        min_points: int,
        idle_seconds: float,
        check_seconds: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        busy_points: int = 0,
    ) -> None:
        """``clock`` must be the one ``pending_writes`` uses (``time.monotonic``);
        ``busy_points``: build even while writes go on once this many points are unindexed
        (0: only when idle)."""
        self.index = index
        self.min_points = min_points
        self.idle_seconds = idle_seconds
        self.busy_points = busy_points
        self.check_seconds = check_seconds
        self.clock = clock
        self.runs = 0
        self.last_seconds = 0.0
        self.errors: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def due(self) -> bool:
        """True when ``min_points`` are unindexed and none was written for ``idle_seconds``,
        or when ``busy_points`` (not 0) are unindexed."""
        pending, last = self.index.pending_writes()
        if 0 < self.busy_points <= pending:
            return True
        return pending >= self.min_points and self.clock() - last >= self.idle_seconds

    def run_once(self, force: bool = False) -> bool:
        """Optimize now if due (or ``force``); True if optimize ran. Errors are counted."""
        if not (force or self.due()):
            return False
        started = time.perf_counter()
        try:
            self.index.optimize()
        except Exception:  # keep the job alive, but loudly and counted
            self.errors["optimize_failed"] += 1
            log.exception("vector index optimize failed")
            return False
        self.last_seconds = time.perf_counter() - started
        self.runs += 1
        release_freed_heap()
        log.info("vector index optimized in %.1f s", self.last_seconds)
        return True

    def start(self) -> None:
        """Check every ``check_seconds`` on a daemon thread (no-op when min_points <= 0)."""
        if self.min_points <= 0 or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="index-optimize", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop checking; waits for a running optimize to finish (bounded)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.wait(self.check_seconds):
            self.run_once()


def release_freed_heap() -> None:
    """Give the heap memory freed so far back to the system (glibc ``malloc_trim``; a no-op
    elsewhere). A build's swap holds the old and the new shards and the writes replayed
    between them at once; freed, that memory stayed in the allocator's free lists and
    counted in the process's anonymous RSS (issue 49: 351 MB anonymous after 40,000 events of
    the store-cost mix with a build every 30,000 points, 274 MB once trimmed)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass

"""A lock many readers share and one writer holds alone (re-entrant for the writer).

The Qdrant Edge index serialised every shard call behind one lock, so the two searches of
a recall (memories, chunks) ran one after the other and two recalls never searched at
once, although the engine answers concurrent reads (Qdrant's server does; four threads
querying the same shards gave the same hits as one, ``tests/unit/stores/test_rw_lock.py``).
Searches now share the lock; writes, flushes and swaps still hold it alone. A waiting
writer stops new readers from entering, so a steady stream of searches cannot starve it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType


class ReadWriteLock:
    """``with lock:`` exclusive (re-entrant); ``with lock.shared():`` shared. A thread
    holding the lock exclusively may also enter ``shared()``; a shared holder must not
    ask for the exclusive lock (it would wait for itself)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._owner: int | None = None
        self._depth = 0
        self._writers_waiting = 0

    def acquire(self) -> bool:
        me = threading.get_ident()
        with self._cond:
            if self._owner == me:
                self._depth += 1
                return True
            self._writers_waiting += 1
            try:
                while self._owner is not None or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._owner, self._depth = me, 1
            return True

    def release(self) -> None:
        with self._cond:
            if self._owner != threading.get_ident():
                raise RuntimeError("release of a lock this thread does not hold")
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._cond.notify_all()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    def owned(self) -> bool:
        """Whether the calling thread holds the lock exclusively."""
        return self._owner == threading.get_ident()

    @contextmanager
    def shared(self) -> Iterator[None]:
        if self.owned():  # the writer reads under its own exclusive hold
            yield
            return
        with self._cond:
            while self._owner is not None or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

"""The HNSW build of :class:`stores.vectors.edge.index.QdrantEdgeIndex`, off the service.

The binding keeps the GIL while a shard optimizes, so the live shard is never optimized:
each collection with unindexed points is flushed and copied (writes wait, searches go
on), built in a niced child process (``stores/vectors/edge/index_build.py``), caught up
with the writes recorded meanwhile, and swapped in; the old generation is deleted.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import qdrant_edge as qe

from breadcrumb.stores.vectors.edge.format import load_config, sparse_copy, warm
from breadcrumb.stores.vectors.edge.index_build import (
    BuildError,
    current_dirs,
    next_generation,
    remove_strays,
    run_child,
    unindexed,
    write_pointer,
)
from breadcrumb.stores.vectors.edge.rw_lock import ReadWriteLock
from breadcrumb.stores.vectors.qdrant_common import COLLECTIONS


class EdgeRebuilds:
    """``optimize()`` and the swap of built shards (mixed into ``QdrantEdgeIndex``, whose
    ``__init__`` sets these attributes)."""

    _path: Path
    _dim: int
    _threshold: int | None
    _lock: ReadWriteLock
    _gate: threading.RLock
    _build_lock: threading.Lock
    _shards: dict[str, qe.EdgeShard]
    _dirs: dict[str, str]
    _dirty: dict[str, float]
    _recorded: dict[str, list[qe.UpdateOperation]] | None
    _epoch: int
    _child: subprocess.Popen[bytes] | None
    _unoptimized: int
    last_build: dict[str, float]

    def ensure(self) -> None:
        raise NotImplementedError

    def _flush_shard(self, name: str) -> None:
        raise NotImplementedError

    def optimize(self) -> bool:
        """Build HNSW (Qdrant's optimizers: index, merge, vacuum) off the service; True if
        a rebuilt shard was swapped in.

        Edge runs no optimizers in the background: without this, new points are searched
        brute force. The live shard is never optimized (the binding keeps the GIL while
        it does): each collection with unindexed points is flushed and copied (writes
        wait, searches go on), built in a niced child process, caught up with the writes
        made meanwhile, and swapped in; the old generation is deleted. Blocks the caller
        until done, nobody else. Searches return the same points after it (tested).
        """
        with self._build_lock:
            self.ensure()
            with self._lock:
                todo = [n for n, s in self._shards.items() if unindexed(s.info()) > 0]
                epoch, pending = self._epoch, self._unoptimized
            if not todo:
                self._done(pending)
                return False
            started = time.perf_counter()
            with self._gate:
                if epoch != self._epoch:  # closed since
                    return False
                with self._lock:
                    for name in todo:
                        self._flush_shard(name)
                    pending = self._unoptimized
                copies = {name: next_generation(self._path, name) for name in todo}
                for name in todo:
                    shutil.copytree(self._path / self._dirs[name], self._path / copies[name],
                                    copy_function=sparse_copy)
                self._recorded = {name: [] for name in todo}
            copied = time.perf_counter()
            try:
                try:
                    changed = run_child([self._path / copies[n] for n in todo], self._dim,
                                        self._threshold, self._started_child)
                except BuildError:
                    if epoch != self._epoch:  # close() stopped the child: not a failure
                        return False
                    raise
                built = time.perf_counter()
                if changed:
                    changed = self._swap(copies, pending, epoch)
                else:  # below the indexing threshold: nothing to build for these points
                    self._done(pending)
            finally:
                self._child, self._recorded = None, None
                remove_strays(self._path, current_dirs(self._path, COLLECTIONS))
            self.last_build = {"copy": copied - started, "build": built - copied,
                               "swap": time.perf_counter() - built}
            return changed

    def _started_child(self, proc: subprocess.Popen[bytes]) -> None:
        self._child = proc

    def _swap(self, copies: dict[str, str], pending: int, epoch: int) -> bool:
        """Load the built copies, replay the writes recorded since the copy, swap them in."""
        new = {name: qe.EdgeShard.load(str(self._path / d), load_config(
            self._path / d, self._dim, self._threshold)) for name, d in copies.items()}
        for d in copies.values():  # before searches go to it (writes go on meanwhile)
            warm(self._path / d)
        recorded = self._recorded or {}
        done = {name: len(recorded[name]) for name in copies}
        for name, shard in new.items():  # most of the catch-up without holding writers
            for operation in recorded[name][: done[name]]:
                shard.update(operation)
        with self._gate:
            if epoch != self._epoch:  # closed meanwhile: the copies are stale
                for shard in new.values():
                    shard.close()
                return False
            for name, shard in new.items():
                for operation in recorded[name][done[name]:]:
                    shard.update(operation)
                shard.flush()
            write_pointer(self._path, {**self._dirs, **copies})
            with self._lock:
                old = [self._shards[name] for name in copies]
                for name in copies:  # the new shards were flushed with every write
                    self._dirty.pop(name, None)
                self._shards.update(new)
                self._dirs.update(copies)
                self._done(pending)
        for shard in old:
            shard.close()
        return True

    def _done(self, pending: int) -> None:
        with self._lock:
            self._unoptimized -= pending  # writes that raced in stay counted

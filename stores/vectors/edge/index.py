"""``VectorIndex`` on Qdrant Edge (qdrant-edge-py): the embedded mode's vector store.

One shard directory per collection under ``path`` (``memories/``, ``chunks/``),
loaded when present, created otherwise. All shard calls go through one lock: the
bindings are not documented as safe for concurrent use from several Python threads.

Durability: every update goes to the shard's write-ahead log first, and the WAL is
replayed on load, so a killed process loses nothing (tested with ``os._exit``).
``flush()`` additionally persists segments (and shortens the WAL a load replays); it
dominates writes (single-point upsert at dim 384: 17 ms with a flush vs 0.2 ms without
on an idle 2-core machine, 176 ms under load; 0.3-0.5 s per flush in a loaded
``bench.derive`` drain, 1.8 s of an 11.8 s drain when it ran every 5 s of writing). So
writes do not flush: the writer calls :meth:`flush_due` when it is idle (a shard with
writes older than ``flush_interval_seconds`` is flushed), and a write flushes only when
its shard has held unflushed writes for ``max_unflushed_seconds`` (bounds the replay
after a crash under a never-idle load); always on :meth:`close`.
``flush_interval_seconds=0`` flushes after every write. Crash safety does not depend on
the flush: an update is in the WAL before it returns and the WAL is replayed on load.

HNSW builds never run on the live shard (the binding keeps the GIL while it
optimizes): :meth:`QdrantEdgeIndex.optimize` (``stores/vectors/edge/rebuild.py``) builds
a copy in a child process and swaps it in (``stores/vectors/edge/index_build.py``). Writers
take ``_gate`` then ``_lock`` (alone); searches share ``_lock``
(``stores/vectors/edge/rw_lock.py``: several at once, also the two collections of one recall),
so they go on while a build copies or waits.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from breadcrumb.stores.ports import Hit, SearchFilter, SparseVector
from breadcrumb.stores.vectors.edge.format import keyword_indexes, load_config, open_shard
from breadcrumb.stores.vectors.edge.index_build import current_dirs, remove_strays
from breadcrumb.stores.vectors.edge.postfilter import Attempt, PostFilter
from breadcrumb.stores.vectors.edge.rebuild import EdgeRebuilds
from breadcrumb.stores.vectors.edge.rw_lock import ReadWriteLock
from breadcrumb.stores.vectors.qdrant_common import (
    CHUNKS,
    COLLECTIONS,
    DENSE,
    MEMORIES,
    SPARSE,
    Condition,
    QdrantIndexBase,
    check_batch,
    chunk_payload,
    forget_conditions,
    missing_memory,
    search_conditions,
    status_of,
    to_hits,
)
from breadcrumb.stores.vectors.search_batch import SearchRequest, batched, grouped
from breadcrumb.topics.records import Chunk

PROBE_POINT_ID = "00000000-0000-0000-0000-000000000000"  # never a memory or chunk id


def _edge_filter(conditions: Sequence[Condition]) -> qe.Filter:
    must: list[Any] = []
    for cond in conditions:
        if isinstance(cond.value, tuple):
            match: Any = qe.MatchAny(list(cond.value))
        else:
            match = qe.MatchValue(cond.value)
        must.append(qe.FieldCondition(cond.key, match=match))
    return qe.Filter(must=must)


def _sparse(vector: SparseVector) -> qe.SparseVector:
    return qe.SparseVector(list(vector.indices), list(vector.values))


class QdrantEdgeIndex(EdgeRebuilds, QdrantIndexBase):
    """Dense + sparse tenant-filtered search over two Qdrant Edge shards.

    Why so many methods: the VectorIndex port (ensure, upserts, searches, payloads,
    count, close) plus the capabilities the embedded mode uses (DeferredFlush,
    WriteBacklog, BatchedPayloads, ErasesPoints, IndexWriteProbe) over the same two
    shards, their lock and their WAL; the private methods are the shard handling those
    share.
    """

    def __init__(self, path: Path, dim: int, flush_interval_seconds: float = 5.0,
                 indexing_threshold_kb: int | None = None,
                 max_unflushed_seconds: float = 60.0, quantization: str = "none",
                 chunk_texts: bool = True) -> None:
        """Nothing is opened here; :meth:`ensure` (or first use) opens the shards.

        ``indexing_threshold_kb``: segment size above which :meth:`optimize` builds
        HNSW (Qdrant's default when None); small values are for tests. ``quantization``
        (``none`` / ``int8``): of shards created from now on (``edge_format``).
        ``chunk_texts=False``: chunk points without their text (recall reads it from SQL).
        """
        self.quantization = quantization
        self.chunk_texts = chunk_texts
        self._path = Path(path)
        self._dim = dim
        self._threshold = indexing_threshold_kb
        self._flush_interval = flush_interval_seconds
        self._max_unflushed = max(max_unflushed_seconds, flush_interval_seconds)
        self._lock = ReadWriteLock()  # every shard call: searches shared, the rest alone
        self._gate = threading.RLock()  # writers; a build holds it to copy and to swap
        self._build_lock = threading.Lock()  # one build at a time
        self._shards: dict[str, qe.EdgeShard] = {}
        self._dirs: dict[str, str] = {}  # collection -> current generation directory
        self._recorded: dict[str, list[qe.UpdateOperation]] | None = None  # during a build
        self._epoch = 0  # bumped by close(): a build started before it is discarded
        self._child: subprocess.Popen[bytes] | None = None
        self._dirty: dict[str, float] = {}  # collection -> time of its oldest unflushed write
        self._unoptimized = 0  # points written since the last optimize()
        self._last_write = time.monotonic()
        self._last_read = self._last_write
        self.last_build: dict[str, float] = {}  # seconds of the last build's phases
        # the second collection's searches (threads start on first use)
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="edge-search")
        self._postfilter = PostFilter()  # lexical searches on the tenant filter alone

    # --- lifecycle -----------------------------------------------------------------
    def ensure(self) -> None:
        """Load or create both shards (the generations ``shards.json`` names) and their
        keyword payload indexes; copies left by an interrupted build are deleted."""
        with self._lock:
            if len(self._shards) == len(COLLECTIONS):
                return
            self._path.mkdir(parents=True, exist_ok=True)
            self._dirs = current_dirs(self._path, COLLECTIONS)
            if not self._build_lock.locked():  # no build of ours is copying right now
                remove_strays(self._path, self._dirs)
            for name in COLLECTIONS:
                if name not in self._shards:
                    self._shards[name] = self._open(self._path / self._dirs[name])

    def _open(self, directory: Path) -> qe.EdgeShard:
        shard = open_shard(directory, load_config(directory, self._dim, self._threshold,
                                                  self.quantization))
        keyword_indexes(shard)
        shard.flush()
        return shard

    def _shard(self, name: str) -> qe.EdgeShard:
        if name not in self._shards:
            self.ensure()
        return self._shards[name]

    def flush(self) -> None:
        """Persist both shards' segments now."""
        with self._gate, self._lock:
            for name in list(self._shards):
                self._flush_shard(name)

    def flush_due(self) -> int:
        """Flush the shards whose oldest unflushed write is ``flush_interval_seconds`` old
        (call it when the writer is idle); returns how many were flushed."""
        now = time.monotonic()
        due = [n for n, at in self._dirty.items() if now - at >= self._flush_interval]
        if not due:
            return 0
        with self._gate, self._lock:
            for name in due:
                if name in self._shards and name in self._dirty:
                    self._flush_shard(name)
        return len(due)

    def unflushed(self) -> list[str]:
        """Collections with writes not flushed yet (in the WAL only)."""
        return sorted(self._dirty)

    def _flush_shard(self, name: str) -> None:  # caller holds _gate and _lock
        self._shards[name].flush()
        self._dirty.pop(name, None)

    def last_activity(self) -> float:
        """``time.monotonic()`` of the last write or search."""
        return max(self._last_write, self._last_read)

    def close(self) -> None:
        """Flush and close both shards (the index can be re-opened with ensure()); a
        running build is stopped and its copy discarded."""
        self._epoch += 1  # before the child dies: the build sees it was stopped
        child = self._child
        if child is not None and child.poll() is None:
            child.terminate()
        with self._gate, self._lock:
            self.flush()
            for shard in self._shards.values():
                shard.close()
            self._shards.clear()

    # --- writes --------------------------------------------------------------------
    def _new_point(self, pid: str, vector: dict[str, Any], payload: dict[str, Any]) -> qe.Point:
        return qe.Point(pid, vector, payload)

    def _sparse_vector(self, vector: SparseVector) -> qe.SparseVector:
        return _sparse(vector)

    def _upsert(self, name: str, points: list[Any]) -> None:
        self._write(name, qe.UpdateOperation.upsert_points(points))

    def _write(self, name: str, operation: qe.UpdateOperation) -> None:
        with self._gate, self._lock:
            shard = self._shard(name)
            shard.update(operation)
            recorded = self._recorded
            if recorded is not None and name in recorded:
                recorded[name].append(operation)  # replayed into the built copy
            now = time.monotonic()
            first = self._dirty.setdefault(name, now)
            if self._flush_interval <= 0 or now - first >= self._max_unflushed:
                self._flush_shard(name)

    def upsert_chunks(
        self,
        chunks: Sequence[Chunk],
        dense: Sequence[Sequence[float] | None],
        sparse: Sequence[SparseVector],
    ) -> None:
        """Insert or replace chunk points; each inherits its memory's current status.
        A ``None`` dense vector stores the point with its sparse vector only."""
        check_batch("chunks", chunks, dense, sparse)
        if not chunks:
            return
        with self._gate, self._lock:
            statuses = self._memory_payloads({c.memory_id for c in chunks})
            points = [
                self._point(c.id, d, s, chunk_payload(c, status_of(statuses, c.memory_id),
                                                      self.chunk_texts))
                for c, d, s in zip(chunks, dense, sparse, strict=True)
            ]
            self._upsert(CHUNKS, points)
            self._wrote(len(points))

    def keep_chunk_texts(self, chunks: Sequence[Chunk]) -> None:
        """Issue 49: the chunks' texts into their points' payloads (before an archive)."""
        with self._gate, self._lock:
            held = {str(r.id) for r in self._shard(CHUNKS).retrieve(
                [c.id for c in chunks], False, False)} if chunks and not self.chunk_texts else ()
            for c in (c for c in chunks if c.id in held):
                self._write(CHUNKS, qe.UpdateOperation.set_payload([c.id], {"text": c.text}))

    def _memory_payloads(self, memory_ids: set[str]) -> dict[str, dict[str, Any]]:
        records = self._shard(MEMORIES).retrieve(list(memory_ids), True, False)
        return {str(r.id): dict(r.payload or {}) for r in records}

    def set_memory_payload(self, memory_id: str, values: dict[str, Any]) -> None:
        """Set payload keys on one memory; a ``status`` also goes to its chunks.

        Raises :class:`stores.vectors.qdrant_common.PointNotFoundError` for an unknown memory.
        """
        with self._gate, self._lock:
            if not self._memory_payloads({memory_id}):
                raise missing_memory(memory_id)
            self._write(MEMORIES, qe.UpdateOperation.set_payload([memory_id], dict(values)))
            if "status" in values:
                by_memory = _edge_filter([Condition("memory_id", memory_id)])
                operation = qe.UpdateOperation.set_payload_by_filter(
                    by_memory, {"status": values["status"]}
                )
                self._write(CHUNKS, operation)

    def set_memory_payloads(
        self, updates: Sequence[tuple[Sequence[str], dict[str, Any]]]
    ) -> list[str]:
        """Many :meth:`set_memory_payload` calls at once: ``(memory ids, values)`` pairs, one
        shard update per pair (and one per distinct ``status`` for the chunks). Ids not in
        the index are skipped and returned (in order), where the single call raises."""
        with self._gate, self._lock:
            wanted = list(dict.fromkeys(m for ids, _ in updates for m in ids))
            found = self._memory_payloads(set(wanted))
            by_status: dict[Any, list[str]] = {}
            for ids, values in updates:
                present: list[Any] = [m for m in ids if m in found]
                if not present:
                    continue
                self._write(MEMORIES, qe.UpdateOperation.set_payload(present, dict(values)))
                if "status" in values:
                    by_status.setdefault(values["status"], []).extend(present)
            for status, ids in by_status.items():
                by_memory = _edge_filter([Condition("memory_id", tuple(ids))])
                operation = qe.UpdateOperation.set_payload_by_filter(by_memory, {"status": status})
                self._write(CHUNKS, operation)
            return [m for m in wanted if m not in found]

    def delete_where(self, user_id: str, thread_id: str | None = None,
                     memory_ids: Sequence[str] | None = None) -> None:
        """Issue 26 (forget): delete a tenant's points, or those of one source thread
        or of some memories, from both shards, and flush them."""
        conditions = forget_conditions(user_id, thread_id, memory_ids)
        if conditions is None:
            return
        with self._gate, self._lock:
            for name in COLLECTIONS:
                operation = qe.UpdateOperation.delete_points_by_filter(_edge_filter(conditions))
                self._write(name, operation)
                self._flush_shard(name)

    # --- reads ---------------------------------------------------------------------
    def _request(
        self, name: str, flt: SearchFilter, k: int,
        dense: Sequence[float] | None, sparse: SparseVector | None,
        with_payload: bool = True,
    ) -> qe.QueryRequest | Attempt | None:
        """The shard request of one search (a lexical one on the tenant filter alone as an
        unfiltered :class:`~breadcrumb.stores.vectors.edge.postfilter.Attempt`); ``None`` when it
        can match nothing."""
        conditions = search_conditions(name, flt, dense, sparse, self._dim)
        if conditions is None:
            return None
        if dense is not None:
            query = qe.Query.Nearest(list(dense), using=DENSE)
        else:
            assert sparse is not None
            query = qe.Query.Nearest(_sparse(sparse), using=SPARSE)
        request = qe.QueryRequest(
            limit=k, query=query, filter=_edge_filter(conditions), with_payload=with_payload
        )
        if sparse is None:
            return request
        return self._postfilter.plan(name, conditions, k, query, request,
                                     with_payload) or request

    def _search(
        self, name: str, flt: SearchFilter, k: int,
        dense: Sequence[float] | None, sparse: SparseVector | None,
    ) -> list[Hit]:
        request = self._request(name, flt, k, dense, sparse)
        if request is None:
            return []
        return self._query_batch(name, [request])[0]

    @contextmanager
    def _reading(self, name: str) -> Iterator[qe.EdgeShard]:
        """The shard under the shared lock (searches run at once; writes wait for them)."""
        while True:
            if name not in self._shards:
                self.ensure()  # exclusive: never asked for while holding the shared lock
            with self._lock.shared():
                shard = self._shards.get(name)
                if shard is not None:
                    yield shard
                    return
            # closed between ensure() and the shared lock: open it again

    def search_batch(self, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
        """Several searches, one ``query_batch`` per collection; hits in request order.
        The memories' batch and the chunks' batch run at the same time (the chunks' on a
        helper thread): the engine answers concurrent reads, and a recall waited for the
        sum of both."""
        groups = grouped(requests)
        if len(groups) < 2:
            return batched(requests, self._built, self._query_batch)
        first, *others = groups.values()
        rest = [pos for positions in others for pos in positions]
        later = self._pool.submit(
            batched, [requests[pos] for pos in first], self._built, self._query_batch)
        out: list[list[Hit]] = [[] for _ in requests]
        for pos, hits in zip(rest, batched([requests[pos] for pos in rest], self._built,
                                           self._query_batch), strict=True):
            out[pos] = hits
        for pos, hits in zip(first, later.result(), strict=True):
            out[pos] = hits
        return out

    def _query_batch(self, name: str, requests: list[qe.QueryRequest | Attempt]
                     ) -> list[list[Hit]]:
        def run(batch: list[qe.QueryRequest]) -> list[Any]:
            with self._reading(name) as shard:
                return list(shard.query_batch(qe.QueryBatchRequest(batch)))

        answers = self._postfilter.run(requests, run)
        self._last_read = time.monotonic()
        return [to_hits(points) if payload else [Hit(str(p.id), float(p.score)) for p in points]
                for points, payload in answers]

    def count(self, exact: bool = True) -> dict[str, int]:
        """``{"memories": n, "chunks": n}``; ``exact=False`` sums the segments' counts
        (0.003 ms, where the exact count scans: 7.7 ms a shard at 100k points, holding
        the lock every search takes)."""
        out = {}
        for name in COLLECTIONS:
            with self._reading(name) as shard:
                out[name] = int(shard.count(qe.CountRequest(exact=exact)))
        return out

    # --- readiness ------------------------------------------------------------------
    def probe_write(self, flush: bool = True) -> None:
        """A write that changes nothing (deleting an id no point has) on both shards, and
        with ``flush`` a flush of their segments: raises when the index cannot take writes
        (closed shard, WAL files gone or unwritable; segment files only with ``flush``)."""
        with self._gate, self._lock:
            for name in COLLECTIONS:
                shard = self._shard(name)
                shard.update(qe.UpdateOperation.delete_points([PROBE_POINT_ID]))
                if flush:
                    self._flush_shard(name)

"""``VectorIndex`` on qdrant-client: a Qdrant server (cluster mode) or local mode.

``client_factory`` builds the client on first use, e.g.
``lambda: QdrantClient(url=..., api_key=...)`` against a server, or
``lambda: QdrantClient(path=...)`` for qdrant-client's embedded local mode, which
runs the same client code path (and is what the unit tests use). Collections are
``{prefix}_memories`` and ``{prefix}_chunks``. Keyword payload indexes are created
for every filtered field, ``user_id`` as the tenant key; local mode accepts and
ignores them (it warns), a server uses them.

Thread safety: a server client (HTTP/gRPC) is used concurrently as is; local mode
(``path=`` or ``:memory:``) has no locking of its own, so there every call of this
index is serialised by a lock.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

from qdrant_client import QdrantClient, models

from breadcrumb.stores.ports import Hit, SearchFilter, SparseVector
from breadcrumb.stores.vectors.qdrant_common import (
    CHUNKS,
    COLLECTIONS,
    DENSE,
    KEYWORD_FIELDS,
    MEMORIES,
    SPARSE,
    TENANT_FIELD,
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
from breadcrumb.stores.vectors.search_batch import SearchRequest, batched
from breadcrumb.topics.records import Chunk


def wal_commits(client: QdrantClient) -> int:
    """qdrant-client local mode persists every point in its own SQLite transaction, on a
    rollback journal: an fsync per point (~1.5 ms of wall time a point on this machine's
    disk, so a batch of 100 points waited ~150 ms). Its collections' SQLite files are
    switched to WAL with ``synchronous=NORMAL``: each commit still survives a process crash
    (``kill -9``: tested), only a power cut can lose the last commits. Returns how many
    collections were switched (each once)."""
    switched = 0
    for collection in getattr(getattr(client, "_client", None), "collections", {}).values():
        conn = getattr(getattr(collection, "storage", None), "storage", None)
        if isinstance(conn, sqlite3.Connection) and not getattr(collection, "_bc_wal", False):
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            collection._bc_wal = True
            switched += 1
    return switched


def _client_filter(conditions: Sequence[Condition]) -> models.Filter:
    must: list[Any] = []
    for cond in conditions:
        if isinstance(cond.value, tuple):
            match: Any = models.MatchAny(any=list(cond.value))
        else:
            match = models.MatchValue(value=cond.value)
        must.append(models.FieldCondition(key=cond.key, match=match))
    return models.Filter(must=must)


def _sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=list(vector.indices), values=list(vector.values))


class QdrantServerIndex(QdrantIndexBase):
    """Dense + sparse tenant-filtered search over two qdrant-client collections.

    Why so many methods: the VectorIndex port (ensure, upserts, searches, payloads,
    count, close) plus the capabilities cluster mode uses (Optimizable, WriteBacklog,
    ErasesPoints, batched search, sibling / drop for generations) over one client and
    its two collections.
    """

    def __init__(self, client_factory: Callable[[], QdrantClient], prefix: str, dim: int) -> None:
        """Nothing connects here; the client is built on first use."""
        self._factory = client_factory
        self._prefix = prefix
        self._dim = dim
        self._client: QdrantClient | None = None
        self._lock = threading.Lock()
        self._local_lock = threading.RLock()
        self._is_local = False
        self._owns_client = True  # False for a sibling: the owner closes the client
        self._unoptimized = 0  # points written since the last optimize()
        self._last_write = time.monotonic()

    @property
    def prefix(self) -> str:
        """The collection-name prefix (one per generation in cluster mode)."""
        return self._prefix

    def collection(self, name: str) -> str:
        """Full collection name of ``memories`` / ``chunks``."""
        return f"{self._prefix}_{name}" if self._prefix else name

    @property
    def client(self) -> QdrantClient:
        """The (lazily built) qdrant-client."""
        with self._lock:
            if self._client is None:
                self._client = self._factory()
                options = self._client.init_options
                self._is_local = bool(options.get("path")) or options.get("location") == ":memory:"
            return self._client

    @contextmanager
    def _serial(self) -> Iterator[QdrantClient]:
        """The client, under the local-mode lock when the client is local."""
        client = self.client
        with self._local_lock if self._is_local else nullcontext():
            yield client

    # --- lifecycle -----------------------------------------------------------------
    def ensure(self) -> None:
        """Create missing collections and their keyword payload indexes."""
        with self._serial() as client:
            for name in COLLECTIONS:
                full = self.collection(name)
                if not client.collection_exists(full):
                    self._create(client, full)
            if self._is_local:
                wal_commits(client)

    def _create(self, client: QdrantClient, full: str) -> None:
        dense = models.VectorParams(size=self._dim, distance=models.Distance.COSINE)
        sparse = models.SparseVectorParams(modifier=models.Modifier.IDF)
        client.create_collection(
            full, vectors_config={DENSE: dense}, sparse_vectors_config={SPARSE: sparse}
        )
        with warnings.catch_warnings():
            # Local mode warns that payload indexes have no effect there; a server uses them.
            warnings.filterwarnings("ignore", message=".*[Pp]ayload index.*")
            for field in KEYWORD_FIELDS:
                schema = models.KeywordIndexParams(
                    type=models.KeywordIndexType.KEYWORD, is_tenant=field == TENANT_FIELD
                )
                client.create_payload_index(full, field, field_schema=schema)

    def optimize(self) -> bool:
        """Same surface as the Edge index; nothing to run here, so always False.

        A Qdrant server indexes in its own background optimizers; local mode keeps no
        HNSW at all (exact search). The pending-write count is reset all the same.
        """
        with self._lock:
            self._unoptimized = 0
        return False

    def close(self) -> None:
        """Close the client (the index can be used again; a new client is built). A sibling
        leaves the shared client to its owner."""
        if not self._owns_client:
            return
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def sibling(self, prefix: str) -> QdrantServerIndex:
        """An index over other collections on this same client and lock (local mode allows
        one client per folder: generations of the cluster stores share it)."""
        other = QdrantServerIndex(lambda: self.client, prefix, self._dim)
        other._lock, other._local_lock = self._lock, self._local_lock
        other._client, other._is_local = self.client, self._is_local
        other._owns_client = False
        return other

    def drop(self) -> None:
        """Delete this index's collections (removing an old generation)."""
        with self._serial() as client:
            for name in COLLECTIONS:
                if client.collection_exists(self.collection(name)):
                    client.delete_collection(self.collection(name))

    # --- writes --------------------------------------------------------------------
    def _new_point(self, pid: str, vector: dict[str, Any], payload: dict[str, Any]
                   ) -> models.PointStruct:
        return models.PointStruct(id=pid, vector=vector, payload=payload)

    def _sparse_vector(self, vector: SparseVector) -> models.SparseVector:
        return _sparse(vector)

    def _upsert(self, name: str, points: list[Any]) -> None:
        """Waits for the write."""
        with self._serial() as client:
            self._upsert_with(client, name, points)

    def _upsert_with(self, client: QdrantClient, name: str, points: list[Any]) -> None:
        client.upsert(self.collection(name), points=points, wait=True)

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
        with self._serial() as client:
            statuses = self._memory_payloads(client, {c.memory_id for c in chunks})
            points = [
                self._point(c.id, d, s, chunk_payload(c, status_of(statuses, c.memory_id)))
                for c, d, s in zip(chunks, dense, sparse, strict=True)
            ]
            self._upsert_with(client, CHUNKS, points)
        self._wrote(len(points))

    def delete_where(self, user_id: str, thread_id: str | None = None,
                     memory_ids: Sequence[str] | None = None) -> None:
        """Issue 26 (forget): delete a tenant's points, or those of one source thread
        or of some memories, from both collections; waits for the write."""
        conditions = forget_conditions(user_id, thread_id, memory_ids)
        if conditions is None:
            return
        selector = models.FilterSelector(filter=_client_filter(conditions))
        with self._serial() as client:
            for name in COLLECTIONS:
                client.delete(self.collection(name), points_selector=selector, wait=True)

    def _memory_payloads(
        self, client: QdrantClient, memory_ids: set[str]
    ) -> dict[str, dict[str, Any]]:
        records = client.retrieve(
            self.collection(MEMORIES), ids=list(memory_ids), with_payload=True, with_vectors=False
        )
        return {str(r.id): dict(r.payload or {}) for r in records}

    def set_memory_payload(self, memory_id: str, values: dict[str, Any]) -> None:
        """Set payload keys on one memory; a ``status`` also goes to its chunks.

        Raises :class:`stores.vectors.qdrant_common.PointNotFoundError` for an unknown memory.
        """
        with self._serial() as client:
            if not self._memory_payloads(client, {memory_id}):
                raise missing_memory(memory_id)
            client.set_payload(
                self.collection(MEMORIES), payload=dict(values), points=[memory_id], wait=True
            )
            if "status" in values:
                client.set_payload(
                    self.collection(CHUNKS),
                    payload={"status": values["status"]},
                    points=_client_filter([Condition("memory_id", memory_id)]),
                    wait=True,
                )

    # --- reads ---------------------------------------------------------------------
    def _request(
        self, name: str, flt: SearchFilter, k: int,
        dense: Sequence[float] | None, sparse: SparseVector | None,
        with_payload: bool = True,
    ) -> models.QueryRequest | None:
        """The query of one search; ``None`` when it can match nothing."""
        conditions = search_conditions(name, flt, dense, sparse, self._dim)
        if conditions is None:
            return None
        query: Any
        if dense is not None:
            query, using = list(dense), DENSE
        else:
            assert sparse is not None
            query, using = _sparse(sparse), SPARSE
        return models.QueryRequest(query=query, using=using, filter=_client_filter(conditions),
                                   limit=k, with_payload=with_payload)

    def _search(
        self, name: str, flt: SearchFilter, k: int,
        dense: Sequence[float] | None, sparse: SparseVector | None,
    ) -> list[Hit]:
        request = self._request(name, flt, k, dense, sparse)
        if request is None:
            return []
        with self._serial() as client:
            response = client.query_points(
                self.collection(name), query=request.query, using=request.using,
                query_filter=request.filter, limit=k, with_payload=True,
            )
        return to_hits(response.points)

    def search_batch(self, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
        """Several searches, one ``query_batch_points`` per collection; hits in order."""
        return batched(requests, self._built, self._query_batch)

    def _query_batch(self, name: str, requests: list[models.QueryRequest]) -> list[list[Hit]]:
        with self._serial() as client:
            responses = client.query_batch_points(self.collection(name), requests=requests)
        return [to_hits(response.points) for response in responses]

    def count(self, exact: bool = True) -> dict[str, int]:
        """``{"memories": n, "chunks": n}``; ``exact=False``: Qdrant's estimate."""
        with self._serial() as client:
            return {
                name: int(client.count(self.collection(name), exact=exact).count)
                for name in COLLECTIONS
            }

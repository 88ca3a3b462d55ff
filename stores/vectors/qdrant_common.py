"""What the two Qdrant backends share: collection layout, payloads, filters, and the
``VectorIndex`` methods they run the same way (:class:`QdrantIndexBase`).

Both ``QdrantEdgeIndex`` (qdrant-edge-py) and ``QdrantServerIndex`` (qdrant-client)
keep two collections / shards, ``memories`` and ``chunks``. Each point has a named
dense vector ``dense`` (cosine) and a named sparse vector ``sparse`` with the IDF
modifier: ``processors.lexical`` supplies term-frequency weights and Qdrant applies
IDF at query time, so the sparse channel scores like BM25.

Filters are built here once as backend-neutral :class:`Condition` values; each
backend only maps them onto its own ``FieldCondition`` / ``MatchValue`` /
``MatchAny`` types.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from breadcrumb.stores.ports import Hit, SearchFilter, SparseVector
from breadcrumb.stores.vectors.search_batch import SearchRequest
from breadcrumb.topics.records import Chunk, Observation

MEMORIES = "memories"
CHUNKS = "chunks"
COLLECTIONS: tuple[str, str] = (MEMORIES, CHUNKS)
DENSE = "dense"
SPARSE = "sparse"

#: Keyword payload indexes on both collections; ``user_id`` is the tenant key.
TENANT_FIELD = "user_id"
KEYWORD_FIELDS: tuple[str, ...] = ("user_id", "project_id", "thread_id", "status", "memory_id")

#: Observation fields copied into a memory point's payload (filtering + display).
MEMORY_PAYLOAD_FIELDS: tuple[str, ...] = (
    "user_id",
    "project_id",
    "status",
    "tier",
    "tags",
    "importance",
    "created_at",
    "kind",
    "summary",
    "supersedes_memory_id",
)


class PointNotFoundError(LookupError):
    """A payload update named a point the index does not hold (same on both backends)."""


def missing_memory(memory_id: str) -> PointNotFoundError:
    """The error for ``set_memory_payload`` on an unknown memory."""
    return PointNotFoundError(f"memory {memory_id} is not in the vector index")


@dataclass(frozen=True, slots=True)
class Condition:
    """``key`` must equal ``value`` (a str) or be any of ``value`` (a tuple)."""

    key: str
    value: str | tuple[str, ...]


def memory_payload(observation: Observation) -> dict[str, Any]:
    """Payload of a memory point: filter keys, display fields and the source range."""
    # read the fields directly: ``to_dict`` deep-copies every field (facts, metadata) and
    # cost ~1 ms per memory in derivation; the values here are the same (tags as a list)
    payload = {name: getattr(observation, name) for name in MEMORY_PAYLOAD_FIELDS}
    payload["tags"] = list(observation.tags)
    payload["memory_id"] = observation.id
    payload["thread_id"] = observation.source_range.thread_id
    payload["start_index"] = observation.source_range.start_index
    payload["end_index"] = observation.source_range.end_index
    return payload


def chunk_payload(chunk: Chunk, status: str, text: bool = True) -> dict[str, Any]:
    """Payload of a chunk point: every chunk field plus its memory's ``status``; without
    ``text``, the chunk's text left out (read from the SQL store instead, issue 49)."""
    payload = chunk.to_dict()
    del payload["id"]  # the point id
    if not text:
        del payload["text"]
    payload["status"] = status
    return payload


def filter_conditions(flt: SearchFilter, collection: str) -> list[Condition]:
    """The ``must`` conditions of a search. ``user_id`` is always the first one.

    ``tags`` only apply to ``memories`` (chunk payloads carry no tags; restrict chunk
    searches through ``memory_ids``). Empty tuples in ``tags`` / ``statuses`` /
    ``memory_ids`` match nothing, as an any-match over no values should.
    """
    if not flt.user_id:
        raise ValueError("SearchFilter.user_id is required for every search")
    conditions = [Condition("user_id", flt.user_id)]
    if flt.project_id is not None:
        conditions.append(Condition("project_id", flt.project_id))
    if flt.thread_id is not None:
        conditions.append(Condition("thread_id", flt.thread_id))
    if flt.tags is not None and collection == MEMORIES:
        conditions.append(Condition("tags", tuple(flt.tags)))
    if flt.statuses is not None:
        conditions.append(Condition("status", tuple(flt.statuses)))
    if flt.memory_ids is not None:
        conditions.append(Condition("memory_id", tuple(flt.memory_ids)))
    return conditions


def forget_conditions(user_id: str, thread_id: str | None,
                      memory_ids: Sequence[str] | None) -> list[Condition] | None:
    """The filter of a forget (issue 26): the tenant, and its thread or memories; None
    when ``memory_ids`` is empty (nothing to delete)."""
    if not user_id:
        raise ValueError("a forget names its tenant")
    conditions = [Condition("user_id", user_id)]
    if thread_id is not None:
        conditions.append(Condition("thread_id", thread_id))
    if memory_ids is not None:
        if not memory_ids:
            return None
        conditions.append(Condition("memory_id", tuple(memory_ids)))
    return conditions


def matches_nothing(conditions: Sequence[Condition]) -> bool:
    """True when an any-match has no values (Qdrant would reject or match all)."""
    return any(isinstance(c.value, tuple) and not c.value for c in conditions)


def check_query(dense: Sequence[float] | None, sparse: SparseVector | None) -> None:
    """Exactly one of ``dense`` / ``sparse`` must be given."""
    if (dense is None) == (sparse is None):
        raise ValueError("give exactly one of dense= or sparse= to a vector search")


def check_batch(
    kind: str, items: Sequence[Any], dense: Sequence[Any], sparse: Sequence[Any]
) -> None:
    """The three sequences of an upsert must line up."""
    if not len(items) == len(dense) == len(sparse):
        raise ValueError(
            f"upsert_{kind}: {len(items)} records, {len(dense)} dense, {len(sparse)} sparse vectors"
        )


def check_dim(vector: Sequence[float], dim: int) -> None:
    """Dense vectors must have the index's dimension."""
    if len(vector) != dim:
        raise ValueError(f"dense vector has dim {len(vector)}, index expects {dim}")


def status_of(payloads: dict[str, dict[str, Any]], memory_id: str) -> str:
    """Status a new chunk inherits: its memory's, or ``active`` when not indexed yet."""
    payload = payloads.get(memory_id)
    return str(payload.get("status") or "active") if payload else "active"


def to_hits(points: Sequence[Any]) -> list[Hit]:
    """Hits of scored points (either client's), payload included."""
    return [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in points]


def search_conditions(name: str, flt: SearchFilter, dense: Sequence[float] | None,
                      sparse: SparseVector | None, dim: int) -> list[Condition] | None:
    """The checked filter of one search on collection ``name``; ``None`` when it can match
    nothing (an impossible filter, or a sparse query without terms)."""
    check_query(dense, sparse)
    conditions = filter_conditions(flt, name)
    if matches_nothing(conditions) or (sparse is not None and not sparse.indices):
        return None
    if dense is not None:
        check_dim(dense, dim)
    return conditions


class QdrantIndexBase(ABC):
    """The ``VectorIndex`` methods both backends run the same way; each backend supplies
    its point and sparse-vector types, how points are written, and how one search runs."""

    _dim: int
    _lock: Any  # a context manager: writers hold it alone (threading lock / ReadWriteLock)
    _unoptimized: int  # points written since the last optimize()
    _last_write: float  # time.monotonic() of the last write

    @abstractmethod
    def _new_point(self, pid: str, vector: dict[str, Any], payload: dict[str, Any]) -> Any:
        """The backend's point."""

    @abstractmethod
    def _sparse_vector(self, vector: SparseVector) -> Any:
        """The backend's sparse vector."""

    @abstractmethod
    def _upsert(self, name: str, points: list[Any]) -> None:
        """Write ``points`` to collection ``name`` (durably, as the backend does)."""

    @abstractmethod
    def _request(self, name: str, flt: SearchFilter, k: int, dense: Sequence[float] | None,
                 sparse: SparseVector | None, with_payload: bool = True) -> Any | None:
        """The backend request of one search; ``None`` when it can match nothing."""

    @abstractmethod
    def _search(self, name: str, flt: SearchFilter, k: int, dense: Sequence[float] | None,
                sparse: SparseVector | None) -> list[Hit]:
        """One search on collection ``name``."""

    def _point(self, pid: str, dense: Sequence[float] | None, sparse: SparseVector,
               payload: dict[str, Any]) -> Any:
        vector: dict[str, Any] = {SPARSE: self._sparse_vector(sparse)}
        if dense is not None:  # a chunk may have no dense vector (ports.upsert_chunks)
            check_dim(dense, self._dim)
            vector[DENSE] = list(dense)
        return self._new_point(pid, vector, payload)

    def upsert_memories(
        self,
        observations: Sequence[Observation],
        dense: Sequence[Sequence[float]],
        sparse: Sequence[SparseVector],
    ) -> None:
        """Insert or replace memory points (id = observation id)."""
        check_batch("memories", observations, dense, sparse)
        if not observations:
            return
        points = [
            self._point(o.id, d, s, memory_payload(o))
            for o, d, s in zip(observations, dense, sparse, strict=True)
        ]
        self._upsert(MEMORIES, points)
        self._wrote(len(points))

    def pending_writes(self) -> tuple[int, float]:
        """(points written since the last optimize, ``time.monotonic()`` of the last write)."""
        return self._unoptimized, self._last_write

    def _wrote(self, points: int) -> None:
        with self._lock:
            self._unoptimized += points
            self._last_write = time.monotonic()

    def _built(self, name: str, req: SearchRequest) -> Any | None:
        return self._request(name, req.flt, req.k, req.dense, req.sparse, req.with_payload)

    def search_memories(
        self, flt: SearchFilter, k: int, dense: Sequence[float] | None = None,
        sparse: SparseVector | None = None,
    ) -> list[Hit]:
        """Top-``k`` memories by one channel (exactly one of dense / sparse)."""
        return self._search(MEMORIES, flt, k, dense, sparse)

    def search_chunks(
        self, flt: SearchFilter, k: int, dense: Sequence[float] | None = None,
        sparse: SparseVector | None = None,
    ) -> list[Hit]:
        """Top-``k`` source chunks; ``flt.memory_ids`` restricts to those memories."""
        return self._search(CHUNKS, flt, k, dense, sparse)

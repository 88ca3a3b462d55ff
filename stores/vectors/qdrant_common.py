"""What the two Qdrant backends share: collection layout, payloads and filters.

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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from breadcrumb.stores.ports import SearchFilter, SparseVector
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


def chunk_payload(chunk: Chunk, status: str) -> dict[str, Any]:
    """Payload of a chunk point: every chunk field plus its memory's ``status``."""
    payload = chunk.to_dict()
    del payload["id"]  # the point id
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

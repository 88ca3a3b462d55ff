"""Several vector searches as one call: the request type and a port-level fallback.

Recall issues up to eight searches (dense + lexical over memories, dense + lexical
over the chunks of each followed range). Both Qdrant adapters answer a list of
:class:`SearchRequest` with one batched call per collection
(``EdgeShard.query_batch`` / ``QdrantClient.query_batch_points``), which plans the
batch as a whole instead of paying the per-call overhead (filter planning, lock,
payload conversion) once per search. :func:`search_many` uses ``search_batch`` when
the index has one and otherwise runs the searches one by one (same results).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar, runtime_checkable

from breadcrumb.stores.ports import Hit, SearchFilter, SparseVector, VectorIndex

Collection = Literal["memories", "chunks"]
R = TypeVar("R")  # an adapter's own request type


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search: ``collection``, filter, ``k`` and exactly one of ``dense`` / ``sparse``.

    ``with_payload=False`` returns hits with an empty payload (ids and scores only),
    which spares reading payloads from disk when the caller looks the records up anyway.
    """

    collection: Collection
    flt: SearchFilter
    k: int
    dense: Sequence[float] | None = None
    sparse: SparseVector | None = None
    with_payload: bool = True


@runtime_checkable
class BatchSearcher(Protocol):
    """A vector index that answers several searches in one call."""

    def search_batch(self, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
        """One hit list per request, in order; same hits as searching one by one."""
        ...


def search_many(index: VectorIndex, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
    """Run ``requests`` batched when ``index`` supports it, else one by one."""
    if isinstance(index, BatchSearcher):
        return index.search_batch(requests)
    out = []
    for req in requests:
        search = index.search_memories if req.collection == "memories" else index.search_chunks
        hits = search(req.flt, req.k, dense=req.dense, sparse=req.sparse)
        out.append(hits if req.with_payload else [Hit(h.id, h.score) for h in hits])
    return out


def grouped(requests: Sequence[SearchRequest]) -> dict[str, list[int]]:
    """Positions of the requests per collection (adapters batch per collection)."""
    groups: dict[str, list[int]] = {}
    for pos, req in enumerate(requests):
        groups.setdefault(req.collection, []).append(pos)
    return groups


def batched(requests: Sequence[SearchRequest],
            build: Callable[[str, SearchRequest], R | None],
            run: Callable[[str, list[R]], list[list[Hit]]]) -> list[list[Hit]]:
    """The adapters' ``search_batch``: ``build`` turns a request into the client's own
    (None: it matches nothing), ``run`` answers one collection's list in one call; the
    hit lists come back in request order."""
    out: list[list[Hit]] = [[] for _ in requests]
    for name, positions in grouped(requests).items():
        live = [(pos, built) for pos in positions
                if (built := build(name, requests[pos])) is not None]
        if not live:
            continue
        answers = run(name, [built for _pos, built in live])
        for (pos, _built), hits in zip(live, answers, strict=True):
            out[pos] = hits
    return out

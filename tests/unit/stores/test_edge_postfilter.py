"""Lexical searches answered unfiltered then filtered (stores.vectors.edge.postfilter), on a real
Qdrant Edge shard: the same hits as the filtered query, for every tenant and status."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.stores.ports import Hit, SearchFilter
from breadcrumb.stores.vectors.edge import postfilter as edge_postfilter
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from breadcrumb.stores.vectors.edge.postfilter import passes
from breadcrumb.stores.vectors.qdrant_common import Condition
from breadcrumb.stores.vectors.search_batch import SearchRequest
from tests.unit.stores.test_qdrant_indexes import (
    EMB,
    add_chunks,
    add_memories,
    chunk,
    obs,
    sparse_of,
    uid,
)


def test_passes_is_the_filter_qdrant_applies() -> None:
    conds = [Condition("user_id", "alice"), Condition("status", ("active", "conflicted"))]
    assert passes({"user_id": "alice", "status": "active"}, conds)
    assert passes({"user_id": "alice", "status": "conflicted", "x": 1}, conds)
    assert not passes({"user_id": "bob", "status": "active"}, conds)
    assert not passes({"user_id": "alice", "status": "superseded"}, conds)
    assert not passes({"status": "active"}, conds)  # no field: no match
    assert not passes({"user_id": ["alice"], "status": "active"}, conds)
    assert not passes({"user_id": None, "status": "active"}, conds)


def _words(n: int) -> str:
    """A text whose count of the query word varies (distinct scores, few ties)."""
    return " ".join(["regex"] * (1 + n % 7) + [f"w{n}", "email"] + ["pad"] * (n % 5))


@pytest.fixture
def index(tmp_path: Path) -> Iterator[QdrantEdgeIndex]:
    idx = QdrantEdgeIndex(tmp_path / "edge", EMB.dim)
    idx.ensure()
    many = [obs(uid(n), "alice", _words(n), status="superseded" if n % 9 == 0 else "active")
            for n in range(300)]
    few = [obs(uid(1000 + n), "bob", _words(n)) for n in range(5)]
    add_memories(idx, many + few)
    add_chunks(idx, [chunk(uid(5000 + n), uid(n), "alice", _words(n)) for n in range(300)]
               + [chunk(uid(6000 + n), uid(1000 + n), "bob", _words(n)) for n in range(5)])
    yield idx
    idx.close()


def _reference(index: QdrantEdgeIndex, requests: list[SearchRequest]) -> list[list[Hit]]:
    """The same searches with every condition in the shard's filter (no attempt)."""
    plan = index._postfilter.plan
    index._postfilter.plan = lambda *a, **k: None  # type: ignore[method-assign]
    try:
        return index.search_batch(requests)
    finally:
        index._postfilter.plan = plan  # type: ignore[method-assign]


def _same(a: list[Hit], b: list[Hit]) -> bool:
    """The same scores, and the same points above the last score (points tied with the
    k-th may be any of them, in Qdrant too)."""
    scores = sorted(round(h.score, 5) for h in a)
    if scores != sorted(round(h.score, 5) for h in b):
        return False
    above = (lambda hits: {h.id for h in hits if round(h.score, 5) > scores[0]}) if scores \
        else (lambda hits: set())
    return bool(above(a) == above(b))


def test_same_hits_as_the_filtered_search_for_every_tenant(index: QdrantEdgeIndex) -> None:
    requests = []
    for user in ("alice", "bob", "carol"):
        for statuses in (("active",), ("active", "superseded"), ("superseded",)):
            flt = SearchFilter(user_id=user, statuses=statuses)
            for k in (1, 3, 10, 40):
                for coll in ("memories", "chunks"):
                    requests.append(SearchRequest(coll, flt, k, sparse=sparse_of("regex email"),
                                                  with_payload=False))
    got, want = index.search_batch(requests), _reference(index, requests)
    assert index._postfilter.attempts > 0 and index._postfilter.fallbacks > 0
    for req, a, b in zip(requests, got, want, strict=True):
        assert _same(a, b), (req.collection, req.flt, req.k)
        assert all(h.payload == {} for h in a)  # ids and scores, as asked
    bob = [h for r, hits in zip(requests, got, strict=True) if r.flt.user_id == "bob"
           for h in hits]
    assert bob and all(int(h.id[-12:]) >= 1000 for h in bob)  # never alice's points


def test_single_searches_keep_payload_and_status(index: QdrantEdgeIndex) -> None:
    flt = SearchFilter(user_id="alice", statuses=("active",))
    hits = index.search_memories(flt, 20, sparse=sparse_of("regex"))
    assert len(hits) == 20
    assert all(h.payload["user_id"] == "alice" and h.payload["status"] == "active"
               for h in hits)
    ref = _reference(index, [SearchRequest("memories", flt, 20, sparse=sparse_of("regex"))])
    assert _same(hits, ref[0])


def test_a_short_attempt_sends_the_next_searches_straight_to_the_filter(
        index: QdrantEdgeIndex, monkeypatch: Any) -> None:
    monkeypatch.setattr(edge_postfilter, "RETRY_AFTER", 3)
    pf = index._postfilter
    flt = SearchFilter(user_id="bob", statuses=("active",))  # 5 of 305 points
    for _ in range(4):
        assert len(index.search_memories(flt, 3, sparse=sparse_of("regex email"))) == 3
    assert (pf.attempts, pf.fallbacks) == (1, 1)  # then 3 filtered searches, no attempt
    index.search_memories(flt, 3, sparse=sparse_of("regex email"))
    assert pf.attempts == 2  # retried after RETRY_AFTER


def test_not_attempted_for_selective_conditions(index: QdrantEdgeIndex) -> None:
    flt = SearchFilter(user_id="alice", statuses=("active",), memory_ids=(uid(1), uid(2)))
    hits = index.search_chunks(flt, 5, sparse=sparse_of("regex"))
    assert {h.id for h in hits} == {uid(5001), uid(5002)}
    index.search_memories(SearchFilter(user_id="alice", tags=("auth",)), 5,
                          sparse=sparse_of("regex"))
    index.search_memories(SearchFilter(user_id="alice"), 5, dense=[0.1] * EMB.dim)
    assert index._postfilter.attempts == 0

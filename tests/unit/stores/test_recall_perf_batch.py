"""``search_batch`` answers exactly what the searches one by one answer, on both adapters."""

from __future__ import annotations

from typing import Any

import pytest

from breadcrumb.stores.ports import Hit, SearchFilter
from breadcrumb.stores.vectors.search_batch import SearchRequest, search_many
from tests.unit.stores import test_qdrant_indexes as base
from tests.unit.stores.test_qdrant_indexes import (
    CORPUS,
    EMB,
    add_chunks,
    add_memories,
    chunk,
    obs,
    sparse_of,
    uid,
)

factory = base.factory  # the same edge / server (local mode) fixtures
index = base.index


def _requests() -> list[SearchRequest]:
    mine = SearchFilter("u1", statuses=("active", "conflicted"))
    chunks_of = SearchFilter("u1", statuses=None, memory_ids=(uid(0), uid(2)))
    return [
        SearchRequest("memories", mine, 3, dense=EMB.embed_query("kafka consumer lag")),
        SearchRequest("chunks", chunks_of, 4, dense=EMB.embed_query("EMAIL_RE plus")),
        SearchRequest("memories", mine, 3, sparse=sparse_of("the docker")),
        SearchRequest("memories", SearchFilter("u1", memory_ids=()), 3,
                      dense=EMB.embed_query("x")),  # matches nothing
        SearchRequest("chunks", chunks_of, 4, sparse=sparse_of("database locked")),
        SearchRequest("memories", SearchFilter("u2"), 3, sparse=sparse_of("kafka")),
    ]


def _one_by_one(idx: Any, requests: list[SearchRequest]) -> list[list[Hit]]:
    out = []
    for r in requests:
        search = idx.search_memories if r.collection == "memories" else idx.search_chunks
        out.append(search(r.flt, r.k, dense=r.dense, sparse=r.sparse))
    return out


class _Unbatched:
    """An index without search_batch: search_many must fall back to single searches."""

    def __init__(self, inner: Any) -> None:
        self.search_memories, self.search_chunks = inner.search_memories, inner.search_chunks


def test_batch_equals_single_searches(index: Any) -> None:
    add_memories(index, [obs(uid(i), "u1", text) for i, text in enumerate(CORPUS)])
    add_memories(index, [obs(uid(9), "u2", "kafka lag of another tenant")])
    add_chunks(index, [chunk(uid(10 + i), uid(i), "u1", text) for i, text in enumerate(CORPUS)])
    requests = _requests()
    single = _one_by_one(index, requests)
    batched = index.search_batch(requests)
    assert [[h.id for h in hits] for hits in batched] == [[h.id for h in hits] for hits in single]
    for got, want in zip(batched, single, strict=True):  # payloads too; scores to float noise
        assert [(h.id, h.payload) for h in got] == [(h.id, h.payload) for h in want]
        assert [h.score for h in got] == pytest.approx([h.score for h in want], rel=1e-5)
    assert batched[0][0].id == uid(1) and batched[2][0].id == uid(3)
    assert {h.id for h in batched[1]} <= {uid(10), uid(12)} and batched[3] == []
    assert [h.id for h in batched[5]] == [uid(9)]  # tenant filter holds inside a batch
    fallback: Any = _Unbatched(index)
    assert [[h.id for h in hits] for hits in search_many(fallback, requests)] == [
        [h.id for h in hits] for hits in single]
    assert search_many(index, []) == []
    bare = [SearchRequest(r.collection, r.flt, r.k, r.dense, r.sparse, with_payload=False)
            for r in requests]
    for hits in (index.search_batch(bare), search_many(fallback, bare)):
        assert [[h.id for h in x] for x in hits] == [[h.id for h in x] for x in single]
        assert all(h.payload == {} for x in hits for h in x)

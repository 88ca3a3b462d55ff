"""The same test bodies against QdrantEdgeIndex and QdrantServerIndex (local mode).

Both run real Qdrant code on tmp_path: qdrant-edge's Rust shard, and qdrant-client's
local mode (the client code path used against a server).
"""

from __future__ import annotations

import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.ports import SearchFilter, SparseVector, VectorIndex
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from breadcrumb.stores.vectors.qdrant_common import PointNotFoundError
from breadcrumb.stores.vectors.server.index import QdrantServerIndex
from breadcrumb.topics.records import Chunk, Observation, SourceRange

EMB = HashEmbedder(dim=64)


def sparse_of(text: str) -> SparseVector:
    """Hand-made TF sparse vector: crc32 token ids, raw counts."""
    counts: dict[int, float] = {}
    for token in text.lower().split():
        tid = zlib.crc32(token.encode()) & 0x7FFFFFFF
        counts[tid] = counts.get(tid, 0.0) + 1.0
    ids = sorted(counts)
    return SparseVector(tuple(ids), tuple(counts[i] for i in ids))


def obs(mid: str, user: str, summary: str, *, tags: tuple[str, ...] = ("auth",),
        status: str = "active", project: str | None = "p1", thread: str = "t1") -> Observation:
    return Observation(
        id=mid, user_id=user, project_id=project, summary=summary,
        source_range=SourceRange(thread, 0, 9), tags=tags, query_hints=("q",),
        retrieve_when="when asked", importance=0.5, created_at="2025-01-01T00:00:00Z",
        status=status,
    )


def chunk(cid: str, mid: str, user: str, text: str) -> Chunk:
    return Chunk(id=cid, memory_id=mid, user_id=user, project_id="p1", thread_id="t1",
                 event_id=f"e-{cid}", event_index=3, char_start=0, char_end=len(text),
                 text=text, tokens=len(text.split()))


def uid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def add_memories(index: VectorIndex, items: list[Observation]) -> None:
    texts = [o.embedding_text for o in items]
    index.upsert_memories(items, EMB.embed_passages(texts), [sparse_of(t) for t in texts])


def add_chunks(index: VectorIndex, items: list[Chunk]) -> None:
    texts = [c.text for c in items]
    index.upsert_chunks(items, EMB.embed_passages(texts), [sparse_of(t) for t in texts])


Factory = Callable[[], Any]


def edge_factory(tmp_path: Path) -> Factory:
    return lambda: QdrantEdgeIndex(tmp_path / "edge", EMB.dim)


def server_factory(tmp_path: Path) -> Factory:
    return lambda: QdrantServerIndex(
        lambda: QdrantClient(path=str(tmp_path / "local")), "bc", EMB.dim
    )


@pytest.fixture(params=["edge", "server"])
def factory(request: pytest.FixtureRequest, tmp_path: Path) -> Factory:
    return edge_factory(tmp_path) if request.param == "edge" else server_factory(tmp_path)


@pytest.fixture
def index(factory: Factory) -> Iterator[Any]:
    idx = factory()
    idx.ensure()
    yield idx
    idx.close()


CORPUS = [
    "the login form rejects plus addressed emails because EMAIL_RE is too strict",
    "kafka consumer lag grew after the partition count changed",
    "sqlite database locked errors during concurrent writes in tests",
    "the deploy pipeline failed on the docker build cache step",
]


def test_dense_search_finds_nearest(index: Any) -> None:
    add_memories(index, [obs(uid(i), "u1", text) for i, text in enumerate(CORPUS)])
    hits = index.search_memories(
        SearchFilter("u1"), 2, dense=EMB.embed_query("kafka consumer lag partition")
    )
    assert hits[0].id == uid(1)
    assert hits[0].score > hits[1].score
    assert hits[0].payload["memory_id"] == uid(1)
    assert hits[0].payload["thread_id"] == "t1"
    assert hits[0].payload["summary"] == CORPUS[1]


def test_sparse_search_matches_identifier(index: Any) -> None:
    add_memories(index, [obs(uid(i), "u1", text) for i, text in enumerate(CORPUS)])
    hits = index.search_memories(SearchFilter("u1"), 5, sparse=sparse_of("EMAIL_RE"))
    assert [h.id for h in hits] == [uid(0)]
    assert hits[0].score > 0


def test_sparse_idf_prefers_rare_term(index: Any) -> None:
    # "the" is in three summaries, "docker" in one: IDF must rank the docker one first.
    add_memories(index, [obs(uid(i), "u1", text) for i, text in enumerate(CORPUS)])
    hits = index.search_memories(SearchFilter("u1"), 5, sparse=sparse_of("the docker"))
    assert hits[0].id == uid(3)


def test_tenant_filter_never_crosses(index: Any) -> None:
    text = CORPUS[0]
    add_memories(index, [obs(uid(1), "u1", text), obs(uid(2), "u2", text)])
    add_chunks(index, [chunk(uid(11), uid(1), "u1", text), chunk(uid(12), uid(2), "u2", text)])
    for user, mine in (("u1", 1), ("u2", 2)):
        flt = SearchFilter(user)
        dense = EMB.embed_query(text)
        assert [h.id for h in index.search_memories(flt, 10, dense=dense)] == [uid(mine)]
        assert [h.id for h in index.search_memories(flt, 10, sparse=sparse_of(text))] == [uid(mine)]
        assert [h.id for h in index.search_chunks(flt, 10, dense=dense)] == [uid(10 + mine)]
    assert index.search_memories(SearchFilter("u3"), 10, dense=EMB.embed_query(text)) == []


def test_status_project_thread_and_tag_filters(index: Any) -> None:
    add_memories(index, [
        obs(uid(1), "u1", CORPUS[0], status="active", tags=("auth",)),
        obs(uid(2), "u1", CORPUS[0], status="superseded", tags=("auth",)),
        obs(uid(3), "u1", CORPUS[0], project="p2", thread="t9", tags=("ui",)),
    ])
    dense = EMB.embed_query(CORPUS[0])

    def ids(flt: SearchFilter) -> set[str]:
        return {h.id for h in index.search_memories(flt, 10, dense=dense)}

    assert ids(SearchFilter("u1")) == {uid(1), uid(3)}  # default statuses=("active",)
    assert ids(SearchFilter("u1", statuses=None)) == {uid(1), uid(2), uid(3)}
    assert ids(SearchFilter("u1", statuses=("superseded",))) == {uid(2)}
    assert ids(SearchFilter("u1", project_id="p2")) == {uid(3)}
    assert ids(SearchFilter("u1", thread_id="t1", statuses=None)) == {uid(1), uid(2)}
    assert ids(SearchFilter("u1", tags=("ui", "nope"))) == {uid(3)}
    assert ids(SearchFilter("u1", tags=())) == set()


def test_memory_ids_filter_for_chunks(index: Any) -> None:
    add_memories(index, [obs(uid(1), "u1", CORPUS[0]), obs(uid(2), "u1", CORPUS[1])])
    add_chunks(index, [
        chunk(uid(11), uid(1), "u1", CORPUS[0]),
        chunk(uid(12), uid(1), "u1", CORPUS[2]),
        chunk(uid(21), uid(2), "u1", CORPUS[0]),
    ])
    flt = SearchFilter("u1", memory_ids=(uid(1),))
    hits = index.search_chunks(flt, 10, dense=EMB.embed_query(CORPUS[0]))
    assert [h.id for h in hits] == [uid(11), uid(12)]
    assert hits[0].payload["text"] == CORPUS[0]
    assert hits[0].payload["event_id"] == f"e-{uid(11)}"
    assert hits[0].payload["status"] == "active"
    assert index.search_chunks(SearchFilter("u1", memory_ids=()), 10,
                               dense=EMB.embed_query(CORPUS[0])) == []


def test_chunk_without_dense_vector_is_stored_and_lexically_searchable(index: Any) -> None:
    add_memories(index, [obs(uid(1), "u1", CORPUS[0])])
    items = [chunk(uid(11), uid(1), "u1", CORPUS[0]), chunk(uid(12), uid(1), "u1", CORPUS[2])]
    index.upsert_chunks(items, [EMB.embed_passages([CORPUS[0]])[0], None],
                        [sparse_of(c.text) for c in items])
    assert index.count()["chunks"] == 2
    dense_hits = index.search_chunks(SearchFilter("u1"), 10, dense=EMB.embed_query(CORPUS[2]))
    assert [h.id for h in dense_hits] == [uid(11)]  # the vector-less chunk has no dense side
    lexical = index.search_chunks(SearchFilter("u1"), 10, sparse=sparse_of("sqlite locked"))
    assert [h.id for h in lexical] == [uid(12)]
    assert lexical[0].payload["text"] == CORPUS[2]
    index.set_memory_payload(uid(1), {"status": "archived"})  # status still reaches it
    assert index.search_chunks(SearchFilter("u1"), 10, sparse=sparse_of("sqlite locked")) == []
    with pytest.raises(ValueError):
        index.upsert_chunks(items[:1], [[0.5, 0.5]], [sparse_of(CORPUS[0])])


def test_set_memory_payload_changes_status_filtering(index: Any) -> None:
    add_memories(index, [obs(uid(1), "u1", CORPUS[0]), obs(uid(2), "u1", CORPUS[0])])
    add_chunks(index, [chunk(uid(11), uid(1), "u1", CORPUS[0]),
                       chunk(uid(21), uid(2), "u1", CORPUS[0])])
    index.set_memory_payload(uid(1), {"status": "superseded", "tier": "confirmed"})
    dense = EMB.embed_query(CORPUS[0])
    assert [h.id for h in index.search_memories(SearchFilter("u1"), 10, dense=dense)] == [uid(2)]
    assert [h.id for h in index.search_chunks(SearchFilter("u1"), 10, dense=dense)] == [uid(21)]
    old = index.search_memories(SearchFilter("u1", statuses=("superseded",)), 10, dense=dense)
    assert [(h.id, h.payload["tier"]) for h in old] == [(uid(1), "confirmed")]


def test_chunks_inherit_status_of_indexed_memory(index: Any) -> None:
    add_memories(index, [obs(uid(1), "u1", CORPUS[0], status="archived")])
    add_chunks(index, [chunk(uid(11), uid(1), "u1", CORPUS[0])])
    hits = index.search_chunks(SearchFilter("u1", statuses=None), 5,
                               dense=EMB.embed_query(CORPUS[0]))
    assert hits[0].payload["status"] == "archived"


def test_upsert_replaces_and_count(index: Any) -> None:
    assert index.count() == {"memories": 0, "chunks": 0}
    add_memories(index, [obs(uid(1), "u1", CORPUS[0])])
    add_memories(index, [obs(uid(1), "u1", CORPUS[1]), obs(uid(2), "u1", CORPUS[2])])
    add_chunks(index, [chunk(uid(11), uid(1), "u1", CORPUS[1])])
    assert index.count() == {"memories": 2, "chunks": 1}
    # the estimate a liveness check reads (no scan) agrees once the points are written
    assert index.count(exact=False) == {"memories": 2, "chunks": 1}
    hits = index.search_memories(SearchFilter("u1"), 1, dense=EMB.embed_query(CORPUS[1]))
    assert hits[0].payload["summary"] == CORPUS[1]


def test_restart_keeps_points(factory: Factory) -> None:
    first = factory()
    first.ensure()
    add_memories(first, [obs(uid(i), "u1", text) for i, text in enumerate(CORPUS)])
    add_chunks(first, [chunk(uid(11), uid(1), "u1", CORPUS[1])])
    first.close()
    second = factory()
    second.ensure()
    try:
        assert second.count() == {"memories": 4, "chunks": 1}
        hits = second.search_memories(SearchFilter("u1"), 1, sparse=sparse_of("kafka"))
        assert hits[0].id == uid(1)
    finally:
        second.close()


def test_bad_calls_raise(index: Any) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        index.search_memories(SearchFilter("u1"), 3)
    with pytest.raises(ValueError, match="exactly one"):
        index.search_memories(SearchFilter("u1"), 3, dense=[0.0] * EMB.dim,
                              sparse=sparse_of("x"))
    with pytest.raises(ValueError, match="user_id"):
        index.search_memories(SearchFilter(""), 3, dense=[0.0] * EMB.dim)
    with pytest.raises(ValueError, match="dim"):
        index.search_memories(SearchFilter("u1"), 3, dense=[1.0, 0.0])
    with pytest.raises(ValueError, match="1 records, 0 dense"):
        index.upsert_memories([obs(uid(1), "u1", "x")], [], [])
    assert index.search_memories(SearchFilter("u1"), 3, sparse=SparseVector((), ())) == []
    with pytest.raises(PointNotFoundError, match=uid(404)):
        index.set_memory_payload(uid(404), {"status": "archived"})


CRASH_SCRIPT = """
import os, sys
from breadcrumb.stores.vectors.qdrant_common import PointNotFoundError
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from tests.unit.stores.test_qdrant_indexes import CORPUS, add_memories, obs, uid
index = QdrantEdgeIndex(sys.argv[1], 64, flush_interval_seconds=3600)
index.ensure()
add_memories(index, [obs(uid(i), "u1", t) for i, t in enumerate(CORPUS)])
os._exit(0)  # no flush, no close: only the WAL has the points
"""


def assert_corpus_survives_a_kill(script: str, folder: Path) -> None:
    """Run ``script`` (it writes CORPUS to an Edge index in ``folder``, then ``os._exit``);
    the reopened index must hold every point and answer a sparse search."""
    root = Path(__file__).resolve().parents[3]
    subprocess.run([sys.executable, "-c", script, str(folder)], cwd=root, check=True,
                   timeout=60)
    index = QdrantEdgeIndex(folder, EMB.dim)
    index.ensure()
    try:
        assert index.count()["memories"] == len(CORPUS)
        hits = index.search_memories(SearchFilter("u1"), 1, sparse=sparse_of("sqlite"))
        assert hits[0].id == uid(2)
    finally:
        index.close()


def test_edge_wal_survives_killed_process(tmp_path: Path) -> None:
    assert_corpus_survives_a_kill(CRASH_SCRIPT, tmp_path / "edge")


def test_concurrent_writes_and_searches(index: Any) -> None:
    def work(worker: int) -> list[str]:
        user = f"w{worker}"
        for i in range(5):
            n = worker * 100 + i
            add_memories(index, [obs(uid(n), user, CORPUS[i % len(CORPUS)])])
            add_chunks(index, [chunk(uid(n + 50), uid(n), user, CORPUS[i % len(CORPUS)])])
            index.search_chunks(SearchFilter(user), 3, dense=EMB.embed_query(CORPUS[0]))
        hits = index.search_memories(SearchFilter(user), 10, dense=EMB.embed_query(CORPUS[0]))
        return [h.payload["user_id"] for h in hits]

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(work, range(4)))
    assert [sorted(set(r)) for r in results] == [[f"w{w}"] for w in range(4)]
    assert [len(r) for r in results] == [5, 5, 5, 5]
    assert index.count() == {"memories": 20, "chunks": 20}

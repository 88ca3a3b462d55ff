"""stores/vectors/edge/rw_lock.py, and concurrent searches of the Qdrant Edge index that
now share it: readers at once, a writer alone, a waiting writer not starved; four threads
searching the same shards get exactly the hits one thread gets."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from breadcrumb.processors.lexical import sparse_vector
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.ports import SearchFilter
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from breadcrumb.stores.vectors.edge.rw_lock import ReadWriteLock
from breadcrumb.stores.vectors.search_batch import SearchRequest
from breadcrumb.topics.records import Chunk, Observation, SourceRange

WAIT = 10.0


def test_readers_share_and_a_writer_waits_for_them() -> None:
    lock = ReadWriteLock()
    inside = threading.Barrier(3, timeout=WAIT)  # two readers inside at once, and the test
    leave = threading.Event()
    order: list[str] = []

    def reader() -> None:
        with lock.shared():
            inside.wait()
            leave.wait(WAIT)
            order.append("reader out")

    def writer() -> None:
        with lock:
            order.append("writer in")

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers:
        t.start()
    inside.wait()  # both readers hold the lock together
    w = threading.Thread(target=writer)
    w.start()
    w.join(0.2)
    assert w.is_alive() and order == []  # the writer waits for the readers
    leave.set()
    for t in [*readers, w]:
        t.join(WAIT)
    assert order == ["reader out", "reader out", "writer in"]


def test_a_waiting_writer_stops_new_readers() -> None:
    lock = ReadWriteLock()
    first_in, release_first = threading.Event(), threading.Event()
    order: list[str] = []

    def first() -> None:
        with lock.shared():
            first_in.set()
            release_first.wait(WAIT)

    def writer() -> None:
        with lock:
            order.append("writer")

    def late_reader() -> None:
        with lock.shared():
            order.append("late reader")

    a = threading.Thread(target=first)
    a.start()
    assert first_in.wait(WAIT)
    w = threading.Thread(target=writer)
    w.start()
    while not lock._writers_waiting:  # the writer is queued
        w.join(0.01)
    r = threading.Thread(target=late_reader)
    r.start()
    r.join(0.2)
    assert r.is_alive()  # not let in past the waiting writer
    release_first.set()
    for t in (a, w, r):
        t.join(WAIT)
    assert order == ["writer", "late reader"]


def test_the_writer_is_reentrant_and_may_read() -> None:
    lock = ReadWriteLock()
    with lock:
        with lock, lock.shared():
            assert lock.owned()
        assert lock.owned()
    assert not lock.owned()
    done = threading.Event()
    threading.Thread(target=lambda: (lock.acquire(), lock.release(), done.set())).start()
    assert done.wait(WAIT)  # fully released


def _index(tmp_path: Path, n: int = 300) -> tuple[QdrantEdgeIndex, HashEmbedder]:
    emb = HashEmbedder()
    index = QdrantEdgeIndex(tmp_path / "vectors", emb.dim, flush_interval_seconds=3600)
    index.ensure()
    texts = [f"memory {i} about port {i % 17} and redis {i % 5} retry {i % 3}"
             for i in range(n)]
    obs = [Observation(id=f"00000000-0000-0000-0000-{i:012d}", user_id="u", project_id="p",
                       summary=t, source_range=SourceRange("t", i, i), tags=(),
                       query_hints=(), retrieve_when="", importance=0.5,
                       created_at="2026-01-01T00:00:00Z") for i, t in enumerate(texts)]
    dense = emb.embed_passages(texts)
    index.upsert_memories(obs, dense, [sparse_vector(t) for t in texts])
    chunks = [Chunk(f"10000000-0000-0000-0000-{i:012d}", o.id, "u", "p", "t", f"e{i}", i, 0,
                    len(t), t, 10) for i, (o, t) in enumerate(zip(obs, texts, strict=True))]
    index.upsert_chunks(chunks, dense, [sparse_vector(t) for t in texts])
    return index, emb


def test_concurrent_searches_find_what_one_thread_finds(tmp_path: Path) -> None:
    index, emb = _index(tmp_path)
    flt = SearchFilter(user_id="u")
    queries = [f"port {i} redis retry" for i in range(12)]

    def both(q: str) -> list[list[tuple[str, float]]]:
        dense = emb.embed_query(q)
        hits = index.search_batch([
            SearchRequest("memories", flt, 10, dense=dense),
            SearchRequest("chunks", flt, 10, sparse=sparse_vector(q)),
            SearchRequest("memories", flt, 10, sparse=sparse_vector(q)),
            SearchRequest("chunks", flt, 10, dense=dense),
        ])
        return [[(h.id, round(h.score, 6)) for h in lst] for lst in hits]

    alone = {q: both(q) for q in queries}
    assert all(len(lst) == 10 for lists in alone.values() for lst in lists)
    # the batches one at a time, collection by collection, give the same lists
    q = queries[0]
    dense = emb.embed_query(q)
    one = index.search_batch([SearchRequest("chunks", flt, 10, sparse=sparse_vector(q))])
    assert [(h.id, round(h.score, 6)) for h in one[0]] == alone[q][1]
    assert [(h.id, round(h.score, 6)) for h in index.search_memories(flt, 10, dense=dense)] \
        == alone[q][0]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(5):
            assert list(pool.map(both, queries * 2)) == [alone[q] for q in queries * 2]
    index.close()

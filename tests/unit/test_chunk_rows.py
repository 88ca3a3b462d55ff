"""Chunk searches without payloads, texts from the store's kept rows (query_api.recall.chunk_rows),
on the real embedded parts: the same hits as the index's payloads give, a chunk the
store no longer holds answered from the payloads, other users' rows never read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.processors.lexical import sparse_vector, weighted_query
from breadcrumb.query_api.recall.chunk_rows import chunk_rows_of, payload, search
from breadcrumb.stores.ports import SearchFilter
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from breadcrumb.stores.vectors.search_batch import SearchRequest, search_many
from breadcrumb.topics.records import Chunk

DIM = 8


def mid(n: int) -> str:
    return f"00000000-0000-0000-0001-{n:012d}"


def chunk(i: int, user: str = "alice") -> Chunk:
    text = f"line {i}: the retry limit is {i} and the port is 54{i:02d}"
    return Chunk(id=f"00000000-0000-0000-0000-{i:012d}", memory_id=mid(i % 3), user_id=user,
                 project_id=None, thread_id="t1", event_id=f"e{i}", event_index=i,
                 char_start=2 * i, char_end=2 * i + len(text), text=text, tokens=12)


def vector(i: int) -> list[float]:
    return [1.0 if d == i % DIM else 0.1 * d for d in range(DIM)]


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[tuple[SqliteStore, QdrantEdgeIndex]]:
    chunks = [chunk(i) for i in range(12)] + [chunk(i, user="bob") for i in range(12, 15)]
    with SqliteStore(tmp_path / "s.sqlite3") as store:
        index = QdrantEdgeIndex(tmp_path / "vectors", DIM, flush_interval_seconds=3600)
        index.ensure()
        store.chunks.put_chunks(chunks)
        index.upsert_chunks(chunks, [vector(i) for i in range(15)],
                            [sparse_vector(c.text) for c in chunks])
        yield store, index  # type: ignore[misc]
        index.close()


def requests(user: str = "alice") -> list[SearchRequest]:
    flt = SearchFilter(user_id=user, statuses=None)
    return [SearchRequest("memories", flt, 5, dense=vector(0), with_payload=False),
            SearchRequest("chunks", flt, 6, dense=vector(3)),
            SearchRequest("chunks", flt, 6, sparse=weighted_query("retry limit port 5407"))]


def as_seen(results: list[list[object]]) -> list[list[tuple[object, ...]]]:
    fields = ("memory_id", "event_id", "event_index", "char_start", "text")
    return [[(h.id, h.score, tuple(h.payload.get(f) for f in fields))  # type: ignore[attr-defined]
             for h in hits] for hits in results]


def test_texts_from_the_store_give_what_the_payloads_give(
        parts: tuple[SqliteStore, QdrantEdgeIndex]) -> None:
    store, index = parts
    rows = chunk_rows_of(store.memories)
    assert rows is not None
    plain = search_many(index, requests())
    filled = search(index, rows, "alice", requests())
    assert all(len(hits) > 0 for hits in filled[1:])
    assert as_seen(filled) == as_seen(plain)  # type: ignore[arg-type]
    assert filled[1][0].payload == payload(chunk(int(filled[1][0].id[-12:])))


def test_a_chunk_the_store_no_longer_holds_is_answered_from_the_payloads(
        parts: tuple[SqliteStore, QdrantEdgeIndex]) -> None:
    store, index = parts
    with store.db.lock:  # what archiving does to the hot rows of a memory
        store.db._conn.execute("DELETE FROM source_chunks WHERE memory_id = ?", (mid(0),))
    plain = search_many(index, requests())
    filled = search(index, chunk_rows_of(store.memories), "alice", requests())
    assert any(h.payload["memory_id"] == mid(0) for hits in filled[1:] for h in hits)
    assert as_seen(filled) == as_seen(plain)  # type: ignore[arg-type]


def test_rows_are_kept_and_served_to_their_user_only(
        parts: tuple[SqliteStore, QdrantEdgeIndex]) -> None:
    store, _ = parts
    ids = [chunk(1).id, chunk(13, user="bob").id, "missing"]
    assert list(store.chunks.get_chunks_by_id("alice", ids)) == [chunk(1).id]
    assert list(store.chunks.get_chunks_by_id("bob", ids)) == [chunk(13).id]
    reads: list[int] = []
    real = store.db.read

    def counted(sql: str, params: object = ()) -> object:
        reads.append(1)
        return real(sql, params)  # type: ignore[arg-type]

    store.db.read = counted  # type: ignore[assignment,method-assign]
    assert store.chunks.get_chunks_by_id("alice", [chunk(1).id])[chunk(1).id] == chunk(1)
    assert reads == []  # kept since the last write
    store.chunks.put_chunks([chunk(1)])  # a write (it reads its events): the next read
    reads.clear()  # goes to SQL
    store.chunks.get_chunks_by_id("alice", [chunk(1).id])
    assert reads == [1]


def test_a_store_that_keeps_no_rows_searches_with_payloads() -> None:
    assert chunk_rows_of(object()) is None


def test_points_written_without_texts_answer_the_same_archived_ones_from_kept_texts(
        parts: tuple[SqliteStore, QdrantEdgeIndex], tmp_path: Path) -> None:
    """Issue 49: the embedded index writes chunk points without their text (recall reads it
    from SQL); an archive first puts the memory's texts into its points' payloads. (Tied
    scores come in an order of the index's own: compared within one index.)"""
    store, _ = parts
    chunks = [chunk(i) for i in range(12)] + [chunk(i, user="bob") for i in range(12, 15)]
    bare = QdrantEdgeIndex(tmp_path / "bare", DIM, flush_interval_seconds=3600,
                           chunk_texts=False)
    bare.ensure()

    def seen(results: list[list[Any]]) -> list[list[tuple[str, float]]]:
        for hits in results[1:]:  # every chunk hit has its own text
            for h in hits:
                want = payload(chunk(int(h.id[-12:])))
                assert {k: h.payload.get(k) for k in want} == want
        return [[(h.id, h.score) for h in hits] for hits in results]

    try:
        bare.upsert_chunks(chunks, [vector(i) for i in range(15)],
                           [sparse_vector(c.text) for c in chunks])
        plain = search_many(bare, requests())
        assert all(hits for hits in plain[1:])
        assert not any("text" in h.payload for hits in plain for h in hits)
        rows = chunk_rows_of(store.memories)
        bare_ids = [[(h.id, h.score) for h in hits] for hits in plain]
        assert seen(search(bare, rows, "alice", requests())) == bare_ids
        bare.keep_chunk_texts([c for c in chunks if c.memory_id == mid(0)]
                              + [chunk(99)])  # not a point of the index: skipped
        with store.db.lock:  # what archiving does to the hot rows of a memory
            store.db._conn.execute("DELETE FROM source_chunks WHERE memory_id = ?", (mid(0),))
        store.forget_cached()
        filled = search(bare, rows, "alice", requests())
        assert any(h.payload["memory_id"] == mid(0) for hits in filled[1:] for h in hits)
        assert seen(filled) == bare_ids
    finally:
        bare.close()

"""Chunk searches without payloads, their texts from the store's kept rows.

A recall's chunk searches (the direct passage search, the followed ranges') return up to
~130 hits. Qdrant Edge reads and converts each hit's payload (text, event, offsets):
about 25 us a hit, some 2.5 ms of a source recall at 100k points. Where the store keeps the
rows it read (the embedded SQLite store, ``stores.sql.sqlite.memories``), the searches ask for
ids and scores only and the texts come from the store: the same rows the index's payloads
were written from. A search with a hit whose chunk the store does not hold (an archived
memory's chunks leave the hot table, their points stay) is run again with payloads, so
the answer is what the payloads give for those chunks (the embedded index writes its
points without their text, issue 49: an archive first puts its chunks' texts into their
points, ``ChunkTextPayloads``), and the store's rows for the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from breadcrumb.stores.ports import Hit, KeptChunkRows, VectorIndex
from breadcrumb.stores.vectors.search_batch import SearchRequest, search_many
from breadcrumb.topics.records import Chunk

ChunkRows = Callable[[str, Sequence[str]], dict[str, Chunk]]


def chunk_rows_of(store: object) -> ChunkRows | None:
    """``store.get_chunks_by_id`` when the store keeps its rows, else None."""
    if isinstance(store, KeptChunkRows) and store.KEEPS_ROWS:
        return store.get_chunks_by_id
    return None


def payload(chunk: Chunk) -> dict[str, Any]:
    """What recall reads of a chunk hit's payload."""
    return {"memory_id": chunk.memory_id, "event_id": chunk.event_id,
            "event_index": chunk.event_index, "char_start": chunk.char_start,
            "text": chunk.text}


def search(index: VectorIndex, rows: ChunkRows | None, user_id: str,
           requests: Sequence[SearchRequest]) -> list[list[Hit]]:
    """:func:`search_many`; with ``rows``, chunk searches without payloads, filled from it."""
    if rows is None:
        return search_many(index, requests)
    wanted = [pos for pos, r in enumerate(requests) if r.collection == "chunks" and r.with_payload]
    bare = list(requests)
    for pos in wanted:
        bare[pos] = replace(requests[pos], with_payload=False)
    results = search_many(index, bare)
    ids = list(dict.fromkeys(h.id for pos in wanted for h in results[pos]))
    found = rows(user_id, ids) if ids else {}
    short = [pos for pos in wanted if any(h.id not in found for h in results[pos])]
    for pos in wanted:
        results[pos] = [Hit(h.id, h.score, payload(found[h.id])) for h in results[pos]
                        if h.id in found]
    if short:  # a chunk the store no longer holds (archived: its hot rows moved to cold
        # storage, its points stay): those searches again, with the index's payloads; a
        # chunk the store holds still reads its text from it (issue 49: the embedded
        # index's points carry no text but an archived memory's)
        for pos, hits in zip(short, search_many(index, [requests[p] for p in short]),
                             strict=True):
            results[pos] = [Hit(h.id, h.score, payload(found[h.id])) if h.id in found else h
                            for h in hits]
    return results

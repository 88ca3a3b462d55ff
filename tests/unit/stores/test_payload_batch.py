"""Batched payload writes (issue 14): ``QdrantEdgeIndex.set_memory_payloads`` gives the same
points as one ``set_memory_payload`` per memory, and ``memory_payload`` reads the fields
directly with the same values ``Observation.to_dict`` gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import qdrant_edge as qe

from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from breadcrumb.stores.vectors.qdrant_common import MEMORY_PAYLOAD_FIELDS, memory_payload
from breadcrumb.topics.records import Fact, Observation, SourceRange
from tests.unit.stores.test_qdrant_indexes import CORPUS, EMB, add_chunks, add_memories, chunk, uid


def _points(index: QdrantEdgeIndex, name: str) -> dict[str, dict[str, Any]]:
    records, _ = index._shard(name).scroll(qe.ScrollRequest(limit=1000, with_payload=True))
    return {str(r.id): dict(r.payload or {}) for r in records}


def _filled(path: Path) -> QdrantEdgeIndex:
    index = QdrantEdgeIndex(path, EMB.dim)
    add_memories(index, [_obs(i) for i in range(1, 5)])
    add_chunks(index, [chunk(uid(10 + i), uid(i), "u1", CORPUS[i - 1]) for i in range(1, 5)])
    return index


def _obs(n: int) -> Observation:
    return Observation(
        id=uid(n), user_id="u1", project_id=None, summary=CORPUS[n - 1],
        source_range=SourceRange("t1", n, n + 3), tags=("auth", "db"), query_hints=("q",),
        retrieve_when="w", importance=0.25, created_at="2025-01-01T00:00:00Z",
        supersedes_memory_id=uid(9), facts=(Fact("env:A", "1", "e1", 2),),
        metadata={"x": {"y": [1]}},
    )


def test_memory_payload_same_values_as_to_dict() -> None:
    observation = _obs(1)
    data = observation.to_dict()
    expected = {name: data[name] for name in MEMORY_PAYLOAD_FIELDS}
    expected |= {"memory_id": uid(1), "thread_id": "t1", "start_index": 1, "end_index": 4}
    payload = memory_payload(observation)
    assert payload == expected
    assert list(payload) == list(expected) and isinstance(payload["tags"], list)


def test_set_memory_payloads_equals_single_calls(tmp_path: Path) -> None:
    updates = [([uid(1), uid(3)], {"status": "superseded", "tier": "confirmed"}),
               ([uid(2)], {"tier": "active"}), ([uid(404)], {"status": "archived"})]
    one, many = _filled(tmp_path / "one"), _filled(tmp_path / "many")
    try:
        for ids, values in updates[:2]:
            for memory_id in ids:
                one.set_memory_payload(memory_id, values)
        assert many.set_memory_payloads(updates) == [uid(404)]
        for name in ("memories", "chunks"):
            assert _points(many, name) == _points(one, name)
        memories, chunks = _points(many, "memories"), _points(many, "chunks")
        assert [memories[uid(i)]["status"] for i in range(1, 5)] == [
            "superseded", "active", "superseded", "active"]
        assert memories[uid(2)]["tier"] == "active"
        assert [chunks[uid(10 + i)]["status"] for i in range(1, 5)] == [
            "superseded", "active", "superseded", "active"]
    finally:
        one.close()
        many.close()

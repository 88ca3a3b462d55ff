"""Qdrant Edge flush policy (issue 14): writes go to the WAL only; the idle writer flushes
shards written ``flush_interval_seconds`` ago; a write flushes its shard once it has held
unflushed writes ``max_unflushed_seconds``; a killed process loses no unflushed write."""

from __future__ import annotations

import time
from pathlib import Path

from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from tests.unit.stores.test_qdrant_indexes import (
    CORPUS,
    EMB,
    add_chunks,
    add_memories,
    assert_corpus_survives_a_kill,
    chunk,
    obs,
    uid,
)


def test_writes_stay_unflushed_until_the_idle_flush_is_due(tmp_path: Path) -> None:
    index = QdrantEdgeIndex(tmp_path / "v", EMB.dim, flush_interval_seconds=0.3,
                            max_unflushed_seconds=3600)
    index.ensure()
    try:
        assert index.unflushed() == []
        add_memories(index, [obs(uid(1), "u1", CORPUS[0])])
        add_chunks(index, [chunk(uid(101), uid(1), "u1", CORPUS[0])])
        assert index.unflushed() == ["chunks", "memories"]
        assert index.flush_due() == 0  # written just now: not due yet
        assert index.unflushed() == ["chunks", "memories"]
        time.sleep(0.35)
        assert index.flush_due() == 2
        assert index.unflushed() == []
        assert index.flush_due() == 0
        assert index.count() == {"memories": 1, "chunks": 1}
    finally:
        index.close()


def test_a_write_flushes_once_its_shard_held_writes_too_long(tmp_path: Path) -> None:
    index = QdrantEdgeIndex(tmp_path / "v", EMB.dim, flush_interval_seconds=0.2,
                            max_unflushed_seconds=0.2)
    index.ensure()
    try:
        add_memories(index, [obs(uid(1), "u1", CORPUS[0])])
        assert index.unflushed() == ["memories"]
        time.sleep(0.25)
        add_memories(index, [obs(uid(2), "u1", CORPUS[1])])  # the oldest write is 0.25 s old
        assert index.unflushed() == []
    finally:
        index.close()


def test_interval_zero_flushes_every_write(tmp_path: Path) -> None:
    index = QdrantEdgeIndex(tmp_path / "v", EMB.dim, flush_interval_seconds=0)
    index.ensure()
    try:
        add_memories(index, [obs(uid(1), "u1", CORPUS[0])])
        assert index.unflushed() == []
    finally:
        index.close()


CRASH_SCRIPT = """
import os, sys
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from tests.unit.stores.test_qdrant_indexes import CORPUS, add_memories, obs, uid
index = QdrantEdgeIndex(sys.argv[1], 64)  # default policy: writes do not flush
index.ensure()
add_memories(index, [obs(uid(i), "u1", t) for i, t in enumerate(CORPUS)])
assert index.unflushed() == ["memories"], index.unflushed()
os._exit(0)  # killed before any flush: only the WAL has the points
"""


def test_unflushed_writes_survive_a_killed_process(tmp_path: Path) -> None:
    assert_corpus_survives_a_kill(CRASH_SCRIPT, tmp_path / "edge")

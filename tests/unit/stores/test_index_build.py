"""The off-process HNSW build of ``QdrantEdgeIndex``: writes made during it are kept,
an interrupted build leaves the live shard as it was, and a reopen finds the new one.

Real Qdrant Edge shards and a real child process; a tiny indexing threshold makes
the build real HNSW over 1,200 points.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from breadcrumb.processors.lexical import sparse_vector
from breadcrumb.stores.ports import SearchFilter
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from breadcrumb.stores.vectors.edge.index_build import unindexed
from tests.conftest import wait_until
from tests.unit.stores.test_optimize_job import EMB, _fill, _uid


def _open(path: Path) -> QdrantEdgeIndex:
    idx = QdrantEdgeIndex(path, EMB.dim, flush_interval_seconds=3600, indexing_threshold_kb=10)
    idx.ensure()
    return idx


def _finds(idx: QdrantEdgeIndex, i: int) -> bool:
    hits = idx.search_memories(SearchFilter(f"u{i % 3}"), 1, sparse=sparse_vector(f"V{i}"))
    return [h.id for h in hits] == [_uid(i)]


def test_writes_during_the_build_are_replayed_into_the_swapped_shard(tmp_path: Path) -> None:
    idx = _open(tmp_path / "v")
    _fill(idx, 0, 1200)
    result: list[bool] = []
    build = threading.Thread(target=lambda: result.append(idx.optimize()))
    build.start()
    wait_until(lambda: idx._child is not None or not build.is_alive(), timeout=60)
    assert idx._child is not None, "the build finished before any write could race it"
    _fill(idx, 1200, 1300)  # written while the child builds the copy
    idx.set_memory_payload(_uid(7), {"status": "superseded"})
    searched_during = _finds(idx, 5)
    build.join(120)
    assert result == [True] and searched_during
    pointer = json.loads((tmp_path / "v" / "shards.json").read_text())
    assert pointer == {"memories": "memories.g1", "chunks": "chunks.g1"}
    assert sorted(p.name for p in (tmp_path / "v").iterdir()) == [
        "chunks.g1", "memories.g1", "shards.json"]  # the old shards are gone
    assert idx.count() == {"memories": 1300, "chunks": 1300}
    assert all(_finds(idx, i) for i in (5, 1250, 1299))
    gone = idx.search_memories(SearchFilter("u1", statuses=("active",)), 1,
                               sparse=sparse_vector("V7"))
    assert _uid(7) not in [h.id for h in gone]
    assert 0 < unindexed(idx._shards["memories"].info()) <= 101  # ~ only the raced writes
    idx.close()
    again = _open(tmp_path / "v")  # reopen: the swapped generation, with the replayed writes
    assert again.count() == {"memories": 1300, "chunks": 1300} and _finds(again, 1299)
    again.close()


def test_close_during_a_build_keeps_the_live_shard_and_drops_the_copy(tmp_path: Path) -> None:
    idx = _open(tmp_path / "v")
    _fill(idx, 0, 1200)
    result: list[bool] = []
    build = threading.Thread(target=lambda: result.append(idx.optimize()), daemon=True)
    build.start()
    wait_until(lambda: idx._child is not None or not build.is_alive(), timeout=60)
    idx.close()  # terminates the child
    build.join(60)
    assert not build.is_alive() and result != [True]
    (tmp_path / "v" / "memories.g7").mkdir()  # a copy left by a killed process
    again = _open(tmp_path / "v")
    assert not (tmp_path / "v" / "memories.g7").exists()
    assert not (tmp_path / "v" / "shards.json").exists()
    assert again.count() == {"memories": 1200, "chunks": 1200} and _finds(again, 5)
    assert again.optimize() is True  # a later build still works
    assert again.count() == {"memories": 1200, "chunks": 1200} and _finds(again, 5)
    again.close()

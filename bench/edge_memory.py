"""Resident memory of a Qdrant Edge shard per point, by memory placement (issue 29's soak).

    python -m bench.edge_memory [--points 12000] [--batch 2000]

The soak found the embedded server's RSS growing with what it stores (~20-30 KB per event,
anonymous memory, back at the same level after a restart). This measures the vector
store's share alone, in this process: a shard made with the project's own config
(``stores.vectors.edge.format.edge_config``), filled with chunk-shaped points (a 384-d
dense vector, a 150-term sparse vector, a payload with 1.5 KB of text and the keyword
fields), then optimized; printed: anonymous and file-backed resident KB per point after
each batch (since the start, and the batch's own points: the second is what a point
adds once the shard's fixed buffers are paid) and after ``optimize()`` (with the MB it
added). Variants, each in its own child process (so one's freed memory does not hide
the next one's growth):

* ``default`` -- the project's config;
* ``cold`` -- dense, sparse and payload storage placed ``Memory.Cold`` (on disk);
* ``sparse-only`` -- the project's config, points without a dense vector (a chunk that
  "embed less" gives no dense vector is still a point, for the lexical channel).

Baseline: the process before the shard is made (same run). Figures move with the
allocator; compare the variants of one run.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile

VARIANTS = ("default", "cold", "sparse-only")


def resident() -> dict[str, int]:
    """Anonymous and file-backed resident KB of this process (``soak_targets.rss_bytes``)."""
    from bench.soak_targets import rss_bytes

    return {field: rss_bytes(os.getpid(), field) // 1024 for field in ("RssAnon", "RssFile")}


def run_variant(variant: str, points: int, batch: int) -> None:
    """Fill one shard and print KB per point (runs in a child process)."""
    import qdrant_edge as qe

    from breadcrumb.stores.vectors.edge.format import edge_config
    from breadcrumb.stores.vectors.qdrant_common import DENSE, SPARSE

    config = edge_config(384)
    if variant == "cold":
        config = qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=384, distance=qe.Distance.Cosine,
                                                memory=qe.Memory.Cold)},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf,
                                                              memory=qe.Memory.Cold)},
            payload_memory=qe.Memory.Cold)
    rng = random.Random(1)
    text = "x" * 1500
    base = resident()
    shard = qe.EdgeShard.create(tempfile.mkdtemp(prefix="edge-mem-"), config)

    last = {"points": 0, **base}

    def per_point(n: int) -> str:
        """KB per point since the start, and of the points since the last line."""
        now, added = resident(), n - last["points"]
        text = "  ".join(f"{k} {(now[k] - base[k]) / n:.2f} KB/point " + (
            f"(last {added}: {(now[k] - last[k]) / added:.2f})" if added else
            f"(optimize: {(now[k] - last[k]) / 1024:+.1f} MB)") for k in sorted(now))
        last.update(now, points=n)
        return text

    written = 0
    while written < points:
        batch_points = []
        for _ in range(min(batch, points - written)):
            written += 1
            sparse = qe.SparseVector(indices=sorted(rng.sample(range(100_000), 150)),
                                     values=[1.0] * 150)
            vectors: dict[str, list[float] | qe.SparseVector | list[list[float]]] = {
                SPARSE: sparse}
            if variant != "sparse-only":
                vectors[DENSE] = [rng.random() for _ in range(384)]
            batch_points.append(qe.Point(written, vectors, {
                "user_id": "u1", "thread_id": f"t{written % 50}", "text": text,
                "event_id": f"e{written}"}))
        shard.update(qe.UpdateOperation.upsert_points(batch_points))
        shard.flush()
        print(f"{variant:12s} {written:6d} points  {per_point(written)}", flush=True)
    shard.optimize()
    shard.flush()
    print(f"{variant:12s} optimized      {per_point(written)}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=12_000)
    ap.add_argument("--batch", type=int, default=2_000)
    ap.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.variant:
        run_variant(args.variant, args.points, args.batch)
        return
    for variant in VARIANTS:
        subprocess.run([sys.executable, "-m", "bench.edge_memory", "--variant", variant,
                        "--points", str(args.points), "--batch", str(args.batch)], check=True)


if __name__ == "__main__":
    main()

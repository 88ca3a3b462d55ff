"""An HNSW build never stops the embedded service from answering (issue 14, item 7).

A real ``breadcrumb serve`` (hash embedder) over a data dir holding N synthetic
memories and chunks in plain (unindexed) Qdrant Edge segments; a client thread keeps
a keep-alive connection busy with ``POST /v1/recall`` while ``POST /v1/admin/optimize``
builds HNSW. Before the off-process build, this service answered nothing for seconds
and reset in-flight keep-alive requests. Asserted: the build really happened (a new
generation is current and every dense vector is in a graph), no recall request failed,
and recall p99 *during the build window* stays within 250 ms. That bound is for a
machine the test has to itself; on a CI box shared with other jobs the same service
is slower with no build at all (measured at load 25 on 2 cores: recall p50 100-180 ms
with no build, p99 over 3 x p50), so the bound is max(250 ms, 4 x the p50 of recall
measured just before the build in the same run) and both figures are printed. No
request may take over 3 s either (the freeze this replaces lasted 6-23 s). The bench
(``python -m bench.index_build``) reports the figures at larger sizes.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx

from bench.recall import USER, populate
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from breadcrumb.stores.vectors.edge.index_build import unindexed
from tests.support.serve import serving

N = 12_000  # memories (and as many chunks): 24,000 points
QUERIES = ["which port does the db use", "the exact email regex", "cron schedule of the sync",
           "what rate limit did we pick", "redis image tag", "summarize the checkout work"]


def _populate(data: Path) -> None:
    store = SqliteStore(data / "breadcrumb.sqlite3")
    store.open()
    index = QdrantEdgeIndex(data / "vectors", HashEmbedder().dim, flush_interval_seconds=3600,
                            indexing_threshold_kb=1000)  # persisted: the server builds at it
    index.ensure()
    populate(store, index, N, HashEmbedder().dim)
    index.close()
    store.close()


class Client(threading.Thread):
    """Recall in a loop on one keep-alive connection; records (start, ms, outcome)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.stop = url, threading.Event()
        self.samples: list[tuple[float, float, str]] = []

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as http:
            i = 0
            while not self.stop.is_set():
                body = {"user_id": USER, "query": QUERIES[i % len(QUERIES)], "mode": "summary"}
                start = time.monotonic()
                try:
                    outcome = str(http.post("/v1/recall", json=body).status_code)
                except httpx.HTTPError as exc:
                    outcome = type(exc).__name__
                self.samples.append((start, (time.monotonic() - start) * 1000, outcome))
                i += 1


def test_recall_answers_within_250ms_p99_while_hnsw_builds(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    _populate(tmp_path / "data")
    with serving(tmp_path) as url:
        client = Client(url)
        client.start()
        try:
            time.sleep(9)  # warm-up, then a same-run baseline without a build
            begin = time.monotonic()
            done = httpx.post(f"{url}/v1/admin/optimize", timeout=900)
            end = time.monotonic()
        finally:
            client.stop.set()
            client.join(60)
    assert done.status_code == 200, done.text
    assert done.json()["optimized"] is True
    vectors = tmp_path / "data" / "vectors"
    assert json.loads((vectors / "shards.json").read_text()) == {
        "memories": "memories.g1", "chunks": "chunks.g1"}
    index = QdrantEdgeIndex(vectors, HashEmbedder().dim)
    index.ensure()
    assert all(unindexed(shard.info()) == 0 for shard in index._shards.values())
    index.close()

    failed = [s for s in client.samples if s[2] != "200"]
    assert not failed, f"{len(failed)} failed recall requests, first: {failed[:3]}"
    during = sorted(ms for start, ms, _ in client.samples if begin <= start <= end)
    assert end - begin > 1.0 and len(during) >= 20, (end - begin, len(during))
    p99 = during[min(len(during) - 1, int(len(during) * 0.99))]
    print(f"build {end - begin:.1f} s, {len(during)} recalls during it, "
          f"p50 {during[len(during) // 2]:.1f} ms, p99 {p99:.1f} ms, max {during[-1]:.1f} ms")
    slow = sorted(((round(ms), round(start - end, 1)) for start, ms, _ in client.samples
                   if begin <= start <= end), reverse=True)[:5]
    base = sorted(ms for start, ms, _ in client.samples if begin - 8 <= start < begin)
    assert len(base) >= 10, len(base)
    bound = max(250.0, 4 * base[len(base) // 2])
    print(f"baseline p50 {base[len(base) // 2]:.1f} ms; bound {bound:.0f} ms; slowest during "
          f"the build (ms, s before its end): {slow}")
    assert p99 <= bound, f"recall p99 {p99:.1f} ms during the build (bound {bound:.0f} ms)"
    assert during[-1] <= 3000, f"a recall took {during[-1]:.0f} ms during the build"

"""OptimizeJob on a real Qdrant Edge index: HNSW is built at runtime, searches stay right.

A tiny indexing threshold makes ``optimize()`` build real HNSW graphs over 1,200
points in about a second; every search made before, during (from another thread)
and after the optimize must name the same points.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from breadcrumb.processors.lexical import sparse_vector
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.ports import SearchFilter
from breadcrumb.stores.vectors.edge import rebuild
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from breadcrumb.stores.vectors.edge.maintenance import OptimizeJob
from breadcrumb.stores.vectors.search_batch import SearchRequest
from breadcrumb.topics.records import Chunk, Observation, SourceRange
from tests.conftest import wait_until

EMB = HashEmbedder(dim=32)
N = 1200


def _uid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def _fill(index: QdrantEdgeIndex, lo: int, hi: int) -> None:
    obs = [Observation(id=_uid(i), user_id=f"u{i % 3}", project_id="p",
                       summary=f"memory {i} about topic{i % 97} value V{i}",
                       source_range=SourceRange(f"t{i}", 0, 1), tags=(f"tag{i % 5}",),
                       query_hints=(f"V{i}",), retrieve_when="", importance=0.5,
                       created_at="2025-01-01T00:00:00Z") for i in range(lo, hi)]
    chunks = [Chunk(_uid(10**6 + i), _uid(i), f"u{i % 3}", "p", f"t{i}", f"e{i}", 1, 0, 9,
                    f"+VALUE_{i}=x{i}", 3) for i in range(lo, hi)]
    texts = [o.embedding_text for o in obs]
    index.upsert_memories(obs, EMB.embed_passages(texts), [sparse_vector(t) for t in texts])
    ctexts = [c.text for c in chunks]
    index.upsert_chunks(chunks, EMB.embed_passages(ctexts), [sparse_vector(t) for t in ctexts])


def _probe(index: QdrantEdgeIndex) -> list[list[str]]:
    """Searches whose answers are exact: a point's own vector / term, a chunk by memory."""
    out = []
    for i in (5, 301, 777, 1103):
        flt = SearchFilter(f"u{i % 3}", statuses=("active",))
        text = f"memory {i} about topic{i % 97} value V{i}"
        out.append([h.id for h in index.search_memories(flt, 1, sparse=sparse_vector(f"V{i}"))])
        own = index.search_memories(flt, 1, dense=EMB.embed_passages(
            [index_text(i, text)])[0])
        out.append([h.id for h in own])
        by_memory = SearchFilter(f"u{i % 3}", statuses=None, memory_ids=(_uid(i),))
        out.append([h.id for h in index.search_chunks(by_memory, 4, dense=EMB.embed_query(text))])
    return out


def index_text(i: int, summary: str) -> str:
    """The embedding_text the memory was indexed with (its own vector finds it first)."""
    return Observation(id=_uid(i), user_id=f"u{i % 3}", project_id="p", summary=summary,
                       source_range=SourceRange(f"t{i}", 0, 1), tags=(f"tag{i % 5}",),
                       query_hints=(f"V{i}",), retrieve_when="", importance=0.5,
                       created_at="2025-01-01T00:00:00Z").embedding_text


@pytest.fixture
def index(tmp_path: Path) -> QdrantEdgeIndex:
    idx = QdrantEdgeIndex(tmp_path / "v", EMB.dim, flush_interval_seconds=3600,
                          indexing_threshold_kb=10)
    idx.ensure()
    _fill(idx, 0, N)
    return idx


def test_searches_identical_before_during_and_after_optimize(index: QdrantEdgeIndex) -> None:
    before = _probe(index)
    assert [ids[0] for ids in before[::3]] == [_uid(i) for i in (5, 301, 777, 1103)]
    job = OptimizeJob(index, min_points=N, idle_seconds=0.0)
    assert job.due()
    during: list[list[list[str]]] = []
    done = threading.Event()

    def search_meanwhile() -> None:
        while not done.is_set():
            during.append(_probe(index))

    searcher = threading.Thread(target=search_meanwhile)
    searcher.start()
    try:
        assert job.run_once()
    finally:
        done.set()
        searcher.join()
    assert job.runs == 1 and not job.errors
    assert index.pending_writes()[0] == 0 and not job.due()
    assert during and all(result == before for result in during)
    assert _probe(index) == before
    batch = index.search_batch([SearchRequest("memories", SearchFilter("u2"), 1,
                                              sparse=sparse_vector("V5"))])
    assert [h.id for h in batch[0]] == [_uid(5)]
    index.close()


def test_a_build_reads_the_new_shards_in_before_they_serve(
        index: QdrantEdgeIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """The swap reads each built shard into the page cache before searches go to it."""
    warmed: list[tuple[str, dict[str, str]]] = []
    real = rebuild.warm

    def spy(directory: Path) -> int:
        warmed.append((directory.name, dict(index._dirs)))
        return real(directory)

    monkeypatch.setattr(rebuild, "warm", spy)
    before = index._dirs.copy()
    assert index.optimize()
    assert sorted(name for name, _ in warmed) == sorted(index._dirs.values())
    assert all(serving == before for _, serving in warmed)  # read before the swap
    assert index._dirs != before
    index.close()


def test_reopened_index_keeps_optimized_results(index: QdrantEdgeIndex, tmp_path: Path) -> None:
    before = _probe(index)
    assert index.optimize() is True  # HNSW built over the 2,400 points
    index.close()
    again = QdrantEdgeIndex(tmp_path / "v", EMB.dim, flush_interval_seconds=3600)
    again.ensure()
    assert _probe(again) == before
    assert again.optimize() is False  # nothing left to do
    again.close()


def test_job_waits_for_enough_points_and_an_idle_moment(tmp_path: Path) -> None:
    idx = QdrantEdgeIndex(tmp_path / "v", EMB.dim, flush_interval_seconds=3600)
    idx.ensure()
    _fill(idx, 0, 10)  # 10 memories + 10 chunks
    assert idx.pending_writes()[0] == 20
    assert not OptimizeJob(idx, min_points=21, idle_seconds=0.0).due()
    assert not OptimizeJob(idx, min_points=20, idle_seconds=3600.0).due()
    later = OptimizeJob(idx, min_points=20, idle_seconds=60.0, clock=lambda: time.monotonic() + 61)
    assert later.due()
    idx.close()


def test_job_builds_while_writes_go_on_once_enough_points_wait(tmp_path: Path) -> None:
    """Issue 49: an ingest that never pauses still gets its points indexed (their mutable
    segment's indexes are on the heap) once ``busy_points`` are unindexed."""
    idx = QdrantEdgeIndex(tmp_path / "v", EMB.dim, flush_interval_seconds=3600)
    idx.ensure()
    _fill(idx, 0, 10)  # 20 points, written just now
    assert not OptimizeJob(idx, min_points=20, idle_seconds=3600.0).due()
    assert not OptimizeJob(idx, min_points=20, idle_seconds=3600.0, busy_points=21).due()
    busy = OptimizeJob(idx, min_points=20, idle_seconds=3600.0, busy_points=20)
    assert busy.due()
    assert busy.run_once() and idx.pending_writes()[0] == 0
    assert not busy.due()
    idx.close()


def test_background_job_optimizes_after_writes(tmp_path: Path) -> None:
    idx = QdrantEdgeIndex(tmp_path / "v", EMB.dim, flush_interval_seconds=3600)
    idx.ensure()
    job = OptimizeJob(idx, min_points=20, idle_seconds=0.0, check_seconds=0.05)
    job.start()
    try:
        _fill(idx, 0, 10)
        wait_until(lambda: job.runs >= 1, timeout=10)
        assert idx.pending_writes()[0] == 0
        assert [h.id for h in idx.search_memories(SearchFilter("u1"), 1,
                                                  sparse=sparse_vector("V4"))] == [_uid(4)]
    finally:
        job.stop()
        idx.close()
    assert not job.errors


def test_cli_optimize_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse
    import json

    from breadcrumb.commands.optimize import cmd_optimize

    settings = Settings(data_dir=tmp_path)
    args = argparse.Namespace(url=None)
    assert cmd_optimize(args, settings) == 0  # nothing stored yet: nothing to do
    assert json.loads(capsys.readouterr().out)["optimized"] is False
    idx = QdrantEdgeIndex(tmp_path / "vectors", EMB.dim, indexing_threshold_kb=10)
    idx.ensure()
    _fill(idx, 0, 300)
    idx.close()
    assert cmd_optimize(args, settings) == 0
    assert json.loads(capsys.readouterr().out)["optimized"] is True
    again = QdrantEdgeIndex(tmp_path / "vectors", EMB.dim)
    again.ensure()
    assert [h.id for h in again.search_memories(SearchFilter("u1"), 1,
                                                sparse=sparse_vector("V4"))] == [_uid(4)]
    again.close()


def test_admin_route_optimizes_and_recall_answers_the_same(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from breadcrumb.eval.corpus import golden_events
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.query_api.app import create_app

    settings = Settings(data_dir=tmp_path, embedder="hash", lifecycle_sweep_seconds=3600)
    runtime = build_runtime(settings, embedder=HashEmbedder())
    with TestClient(create_app(runtime)) as http:
        runtime.gateway.submit(golden_events(), "cli")
        runtime.gateway.wait_processed(120)
        body = {"user_id": "u1", "query": "the exact EMAIL_RE regex", "mode": "source"}
        before = http.post("/v1/recall", json=body).json()
        done = http.post("/v1/admin/optimize")
        assert done.status_code == 200 and done.json()["pending_points"] == 0
        after = http.post("/v1/recall", json=body).json()
    assert before["memories"] and before["evidence"]
    assert [m["id"] for m in after["memories"]] == [m["id"] for m in before["memories"]]
    assert after["evidence"] == before["evidence"]


def _busy_build_settings(data_dir: Path) -> Settings:
    """Hash embedder, no idle moment within the test: an index builds only once 20 points
    wait unindexed (checked every 0.05 s)."""
    return Settings(data_dir=data_dir, embedder="hash", lifecycle_sweep_seconds=3600,
                    index_optimize_idle_seconds=3600, index_optimize_check_seconds=0.05,
                    index_optimize_busy_points=20)


def test_an_in_process_import_builds_the_index_while_it_ingests(tmp_path: Path) -> None:
    """Issue 49: ``breadcrumb ingest`` (the CLI's in-process runtime) starts the index's
    background builds, so a long import never pausing still gets its points indexed."""
    from breadcrumb.clients.service import LocalBackend
    from breadcrumb.eval.corpus import golden_events

    backend = LocalBackend(_busy_build_settings(tmp_path / "d"))
    try:
        index = backend.runtime.index
        backend.ingest(golden_events(), flush=True, batch=200, timeout=120)
        wait_until(lambda: index.pending_writes()[0] < 20, timeout=30)
        assert index.pending_writes()[0] < 20  # built: an hour of idle never came
    finally:
        backend.close()


def test_a_replay_builds_the_new_generations_index_before_the_switch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 49: the generation a replay fills builds its index as the log is replayed (its
    job started with the replay, not at the switch), so a long replay's unindexed points do
    not pile up in memory."""
    import breadcrumb.infra.embedded as embedded
    from breadcrumb.eval.corpus import golden_events
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.stores.generations.embedded import GenerationCatalog

    opened: list[embedded.Generation] = []
    real_open, real_switch = embedded.open_generation, GenerationCatalog.switch

    def spy_open(*args: object, **kw: object) -> embedded.Generation:
        gen = real_open(*args, **kw)  # type: ignore[arg-type]
        opened.append(gen)
        return gen

    built_before_switch: list[int] = []

    def spy_switch(self: GenerationCatalog, name: str) -> None:
        job = opened[-1].optimizer  # the generation being filled, not yet adopted
        wait_until(lambda: job.runs >= 1, timeout=20)
        built_before_switch.append(job.runs)
        real_switch(self, name)

    runtime = build_runtime(_busy_build_settings(tmp_path / "d"))
    try:
        runtime.gateway.submit(golden_events(), "test")
        runtime.gateway.wait_processed(120)
        monkeypatch.setattr(embedded, "open_generation", spy_open)
        monkeypatch.setattr(GenerationCatalog, "switch", spy_switch)
        assert embedded.replay(runtime, "g2").state == "done"
        assert built_before_switch and built_before_switch[0] >= 1
    finally:
        runtime.stop()


def _anonymous_bytes() -> int:
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("Anonymous:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no Anonymous line")


def test_freed_heap_goes_back_to_the_system_after_a_build() -> None:
    from breadcrumb.stores.vectors.edge.maintenance import release_freed_heap

    release_freed_heap()
    blocks = [bytes(2048) + bytes([n % 251]) for n in range(60_000)]  # ~120 MB of mallocs
    keep = blocks[-1:]  # the top of the heap stays in use: only a trim gives the rest back
    del blocks
    freed = _anonymous_bytes()
    release_freed_heap()
    assert freed - _anonymous_bytes() > 60 * 2**20
    assert keep

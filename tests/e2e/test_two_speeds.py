"""Two speeds (issue 14): a closed range's memory is written and searchable with its batch;
its passage vectors follow in slices, also after a crash, ending exactly where a one-speed
run ends (real embedded runtime: SQLite + Qdrant Edge, hash embedder)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from breadcrumb.eval.corpus import big_pytest_log
from breadcrumb.infra.bootstrap import Runtime, build_runtime
from breadcrumb.processors.embed_digest import digest
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.ports import SearchFilter


class Recording(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[int] = []  # texts per embed_passages call

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.append(len(texts))
        return super().embed_passages(texts)


def _events() -> list[dict[str, Any]]:
    def event(thread: str, n: int, kind: str, content: str) -> dict[str, Any]:
        return {"event_id": f"{thread}-{n}", "user_id": "u1", "project_id": "shop",
                "thread_id": thread, "ts": f"2026-11-30T10:00:{n:02d}Z",
                "role": "tool" if kind == "tool_result" else "user", "kind": kind,
                "content": content}
    return [
        event("ci", 0, "message", "Run the whole test suite before the release."),
        event("ci", 1, "tool_result", big_pytest_log()),
        event("ci", 2, "session_end", "end"),
        event("cache", 0, "message", "Set the redis maxmemory policy to allkeys-lru."),
        event("cache", 1, "message", "Done: maxmemory-policy allkeys-lru on redis 7.2."),
        event("cache", 2, "session_end", "end"),
    ]


def _runtime(path: Path, embedder: HashEmbedder, two_speeds: bool = True) -> Runtime:
    settings = Settings(data_dir=path, embedder="hash", derive_two_speeds=two_speeds,
                        derive_batch_max_ms=600_000)  # one batch, however loaded the machine
    return build_runtime(settings, embedder=embedder)


def _drain(runner: Any) -> None:
    for _ in range(1000):  # bounded
        if not runner.process_available() and runner.unprocessed() == 0:
            return
    raise AssertionError(f"{runner.unprocessed()} left")


def _chunk_ids(runtime: Runtime) -> set[str]:
    return {c.id for m in runtime.memories.list_memories("u1", limit=100)
            for c in runtime.derived_store().chunks.get_chunks("u1", m.id)}


def test_memories_first_then_passages_even_across_a_restart(tmp_path: Path) -> None:
    reference = _runtime(tmp_path / "one", HashEmbedder(), two_speeds=False)
    try:
        reference.gateway.submit(_events())
        _drain(reference.gateway)
        want_memories = sorted(m.id for m in
                               reference.memories.list_memories("u1", limit=100))
        want_chunks = _chunk_ids(reference)
        want_count = reference.index.count()
    finally:
        reference.stop()
    memories = len(want_memories)
    assert memories >= 2 and want_count["chunks"] == len(want_chunks) > 64

    embedder = Recording()
    live = _runtime(tmp_path / "two", embedder)
    runner: Any = live.gateway
    try:
        runner.submit(_events())
        assert runner.process_available() == 6  # the whole log in one batch
        assert embedder.texts == [memories]  # the memories' texts only, no chunk text
        assert sorted(m.id for m in live.memories.list_memories("u1", limit=100)) \
            == want_memories
        assert live.index.count() == {"memories": memories, "chunks": 0}
        assert runner.passages_pending() == memories == runner.unprocessed()
        answer = live.recall.recall(RecallRequest(user_id="u1", query="redis maxmemory policy"))
        assert answer["memories"], answer  # searchable before any passage vector exists
        assert runner.process_available() > 0  # the log is idle: one passage slice
        assert 0 < live.index.count()["chunks"] < len(want_chunks)
        assert max(embedder.texts[1:]) <= 32  # slices at the embedder's batch size
    finally:
        live.stop()  # a crash between slices: the marks say what is still due

    again = _runtime(tmp_path / "two", HashEmbedder())
    try:
        runner = again.gateway
        assert runner.passages_pending() >= 1
        _drain(runner)
        assert runner.passages_pending() == 0
        assert again.index.count() == want_count
        assert _chunk_ids(again) == want_chunks
        assert not [n for n in again.derived_store().counters.get_counters()
                    if n.startswith("passages_pending/")]
        # the recovered slices embed what a live run embeds: the log's digest (its kind is
        # re-read from the raw range) on its first chunk
        vector = HashEmbedder().embed_passages([digest(big_pytest_log())])[0]
        top = again.index.search_chunks(SearchFilter("u1", statuses=None), 1, dense=vector)
        assert [(h.payload["event_id"], h.payload["char_start"]) for h in top] == [("ci-1", 0)]
        assert top[0].score > 0.999  # the very vector, not a near one
    finally:
        again.stop()

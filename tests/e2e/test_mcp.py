"""The MCP server driven by the SDK's own client over stdio (a real subprocess)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from breadcrumb.client import LocalBackend
from breadcrumb.infra.settings import Settings
from tests.conftest import ROOT, example_events

REGEX = r"/^[^@\s]+@[^@\s]+\.[^@\s]+$/i"


def _ingest(data_dir: Path) -> None:
    backend = LocalBackend(Settings(data_dir=data_dir, embedder="hash"))
    try:
        backend.runtime.start()
        report = backend.ingest(example_events(), flush=True, batch=500, timeout=120)
        assert report["rejected"] == []
    finally:
        backend.close()


async def _session(data_dir: Path) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "breadcrumb.cli", "mcp", "--data-dir", str(data_dir), "--embedder", "hash"],
        cwd=str(ROOT),
    )
    async with Client(params, read_timeout_seconds=120) as client:
        tools = await client.list_tools()
        source = await client.call_tool("recall_memory_source", {
            "user_id": "demo", "source_thread_id": "auth-refactor", "source_start_index": 0,
            "source_end_index": 30, "query": "the exact email regex we decided",
            "max_tokens": 200})
        search = await client.call_tool("search_memory", {
            "user_id": "demo", "query": "the exact email regex we decided for sign-up"})
        other = await client.call_tool("search_memory", {
            "user_id": "nobody", "query": "the exact email regex we decided for sign-up"})
    return {"tools": tools, "source": source, "search": search, "other": other}


def test_mcp_tools_over_stdio(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _ingest(data_dir)
    out = anyio.run(_session, data_dir)
    names = {tool.name for tool in out["tools"].tools}
    assert names == {"search_memory", "recall_memory_source"}

    evidence = out["source"].structured_content
    assert not out["source"].is_error
    assert set(evidence) >= {"source_thread_id", "source_start_index", "source_end_index",
                             "matched_event_ids", "extracted_text", "reason"}
    assert REGEX in evidence["extracted_text"]
    assert evidence["matched_event_ids"]

    answer = out["search"].structured_content
    assert answer["classification"] == "exact_value_needed"
    assert answer["memories"] and "score_parts" in answer["memories"][0]
    assert REGEX in "\n".join(e["extracted_text"] for e in answer["evidence"])
    assert out["other"].structured_content["memories"] == []

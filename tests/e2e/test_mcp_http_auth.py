"""MCP over streamable HTTP takes the same keys as the query service (a real subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from breadcrumb.stores.keys.store import new_key, sqlite_key_store
from tests.conftest import ROOT, wait_until
from tests.e2e.test_mcp import REGEX, _ingest
from tests.support.serve import free_port

QUERY = "the exact email regex we decided for sign-up"


@pytest.fixture()
def mcp_http(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    data_dir = tmp_path / "data"
    _ingest(data_dir)
    keys: dict[str, str] = {}
    for name, tenant in (("demo", "demo"), ("other", "nobody")):
        record, keys[name] = new_key(tenant, "reader")
        sqlite_key_store(data_dir).add(record)
    port = free_port()
    log = (tmp_path / "mcp.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "breadcrumb.cli", "mcp", "--transport", "http", "--port",
         str(port), "--data-dir", str(data_dir), "--embedder", "hash"],
        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ})
    url = f"http://127.0.0.1:{port}/mcp"

    def up() -> bool:
        try:
            return httpx.get(url, timeout=1).status_code == 401 or proc.poll() is not None
        except httpx.HTTPError:
            return False

    try:
        wait_until(up, timeout=90)
        assert proc.poll() is None, (tmp_path / "mcp.log").read_text(errors="replace")
        yield url, keys
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


async def _calls(url: str, key: str) -> dict[str, Any]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        own = await client.call_tool("search_memory", {"query": QUERY, "detail": "full"})
        named = await client.call_tool("search_memory", {"query": QUERY, "user_id": "demo",
                                                         "detail": "full"})
        foreign = await client.call_tool("search_memory", {"query": QUERY, "user_id": "demo2",
                                                           "detail": "full"})
        source = await client.call_tool("recall_memory_source", {
            "source_thread_id": "auth-refactor", "source_start_index": 0,
            "source_end_index": 30, "query": QUERY, "user_id": "someone-else"})
    return {"own": own, "named": named, "foreign": foreign, "source": source}


def test_mcp_http_needs_a_key_and_binds_the_tenant(mcp_http: tuple[str, dict[str, str]]) -> None:
    url, keys = mcp_http
    refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                         headers={"accept": "application/json, text/event-stream"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
    unknown = {"Authorization": "Bearer bc_000000000000_" + "x" * 40}
    bogus = httpx.post(url, json={}, headers=unknown)
    assert bogus.status_code == 401

    demo = anyio.run(_calls, url, keys["demo"])
    assert not demo["own"].is_error
    assert REGEX in "\n".join(e["extracted_text"] for e in demo["own"].structured_content[
        "evidence"])
    assert demo["named"].structured_content["memories"]
    assert demo["foreign"].is_error and demo["source"].is_error

    other = anyio.run(_calls, url, keys["other"])
    assert other["own"].structured_content["memories"] == []  # its own tenant: nothing
    assert other["named"].is_error  # naming demo with nobody's key


def test_mcp_url_mode_forwards_the_callers_key(tmp_path: Path, server: str) -> None:  # noqa: F811
    """``mcp --transport http --url``: the caller's key reaches the query service."""
    record, key = new_key("demo", "reader")
    sqlite_key_store(tmp_path / "data").add(record)  # the dashboard fixture's data dir
    wait_until(lambda: httpx.get(f"{server}/v1/stats").status_code == 401, timeout=10)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "BREADCRUMB_API_KEY"}
    with (tmp_path / "mcp-url.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "breadcrumb.cli", "mcp", "--transport", "http", "--port",
             str(port), "--url", server], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
            env=env)
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            wait_until(lambda: _answers(url) or proc.poll() is not None, timeout=90)
            assert proc.poll() is None
            out = anyio.run(_calls, url, key)
            assert not out["own"].is_error  # forwarded: the service bound it to demo
            assert out["foreign"].is_error  # the service answered 403 for demo2
        finally:
            proc.terminate()
            proc.wait(30)


def _answers(url: str) -> bool:
    try:
        httpx.get(url, timeout=1)
    except httpx.HTTPError:
        return False
    return True


from tests.e2e.test_dashboard_browser import server  # noqa: E402, F401  (the fixture)

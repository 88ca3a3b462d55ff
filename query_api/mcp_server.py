"""The MCP server: ``search_memory`` and ``recall_memory_source`` over stdio or HTTP.

Built on the official ``mcp`` SDK (``MCPServer``). The tools call a
:class:`breadcrumb.query_api.backend.Backend`: the embedded runtime in this process, or a running
query service over HTTP. Answers are the contract's RecallResponse and
RecalledEvidence, returned as structured tool output.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer

from breadcrumb.query_api.backend import Backend

INSTRUCTIONS = (
    "Breadcrumb keeps every agent event verbatim and summaries that point back to them. "
    "Use search_memory to find memories (and, for exact values, verbatim evidence); use "
    "recall_memory_source to cut the lines answering a query from one source range. "
    "Never retype an exact value from a summary: quote the evidence."
)


def build_mcp_server(backend: Backend, name: str = "breadcrumb") -> MCPServer:
    """An MCPServer whose two tools answer through ``backend``."""
    server = MCPServer(name, instructions=INSTRUCTIONS)

    @server.tool(description="Retrieve → Decide → Recall → Extract: a RecallResponse with "
                             "memories (score, score_parts, source_range) and verbatim evidence.")
    async def search_memory(
        user_id: str,
        query: str,
        project_id: str | None = None,
        k: int = 5,
        max_tokens: int = 800,
        mode: Literal["auto", "summary", "source"] = "auto",
        include_superseded: bool = False,
        include_archived: bool = False,
        thread_id: str | None = None,
        tags: list[str] | None = None,
    ) -> dict[str, Any]:
        body = {"user_id": user_id, "query": query, "project_id": project_id, "k": k,
                "max_tokens": max_tokens, "mode": mode,
                "include_superseded": include_superseded,
                "include_archived": include_archived, "thread_id": thread_id, "tags": tags}
        return await anyio.to_thread.run_sync(backend.recall, _given(body))

    @server.tool(description="recallMemorySource: the verbatim lines of one source range "
                             "that answer the query (a RecalledEvidence).")
    async def recall_memory_source(
        user_id: str,
        source_thread_id: str,
        source_start_index: int,
        source_end_index: int,
        query: str,
        max_tokens: int = 800,
    ) -> dict[str, Any]:
        body = {"user_id": user_id, "source_thread_id": source_thread_id,
                "source_start_index": source_start_index,
                "source_end_index": source_end_index, "query": query, "max_tokens": max_tokens}
        return await anyio.to_thread.run_sync(backend.recall_source, body)

    return server


def _given(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def run_mcp(backend: Backend, transport: str, host: str, port: int) -> None:
    """Serve until stopped: ``stdio`` or ``http`` (streamable HTTP at ``/mcp``)."""
    server = build_mcp_server(backend)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)

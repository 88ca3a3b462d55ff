"""The MCP server: ``search_memory`` and ``recall_memory_source`` over stdio or HTTP.

Built on the official ``mcp`` SDK (``MCPServer``). The tools call a
:class:`breadcrumb.client.Backend`: the embedded runtime in this process, or a running
query service over HTTP. Answers are the contract's RecallResponse and
RecalledEvidence, returned as structured tool output.

Over HTTP the same keys as the query service apply (:mod:`query_api.auth`): on a data dir,
``Authorization: Bearer <key>`` is checked here and ``user_id`` is bound to the key's
tenant (absent: the key's tenant; another tenant: a tool error); proxying ``--url``, the
caller's key is forwarded to the query service, which decides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from breadcrumb.client import Backend
from breadcrumb.infra.settings import Settings
from breadcrumb.query_api.auth import Principal

INSTRUCTIONS = (
    "Breadcrumb keeps every agent event verbatim and summaries that point back to them. "
    "Use search_memory to find memories (and, for exact values, verbatim evidence); use "
    "recall_memory_source to cut the lines answering a query from one source range. "
    "Never retype an exact value from a summary: quote the evidence."
)


BackendForKey = Callable[[str | None], Backend]


def build_mcp_server(backend: Backend, name: str = "breadcrumb",
                     backend_for_key: BackendForKey | None = None) -> MCPServer:
    """An MCPServer whose two tools answer through ``backend`` (or, when forwarding keys,
    through ``backend_for_key(caller's key)``)."""
    server = MCPServer(name, instructions=INSTRUCTIONS)

    def bound(ctx: Context | None, user_id: str | None) -> tuple[Backend, str | None]:
        principal, token = _caller(ctx)
        if backend_for_key is not None:
            return backend_for_key(token), user_id
        if principal is None:
            return backend, user_id
        if user_id is not None and user_id != principal.tenant and not principal.is_admin:
            raise ToolError("user_id names another tenant than this key's")
        return backend, user_id or principal.tenant

    @server.tool(description="Retrieve → Decide → Recall → Extract: a RecallResponse with "
                             "memories (score, score_parts, source_range) and verbatim evidence.")
    async def search_memory(
        query: str,
        user_id: str | None = None,
        project_id: str | None = None,
        k: int = 5,
        max_tokens: int = 800,
        mode: Literal["auto", "summary", "source"] = "auto",
        include_superseded: bool = False,
        include_archived: bool = False,
        thread_id: str | None = None,
        tags: list[str] | None = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        target, user_id = bound(ctx, user_id)
        body = {"user_id": user_id, "query": query, "project_id": project_id, "k": k,
                "max_tokens": max_tokens, "mode": mode,
                "include_superseded": include_superseded,
                "include_archived": include_archived, "thread_id": thread_id, "tags": tags}
        return await anyio.to_thread.run_sync(target.recall, _given(body))

    @server.tool(description="recallMemorySource: the verbatim lines of one source range "
                             "that answer the query (a RecalledEvidence).")
    async def recall_memory_source(
        source_thread_id: str,
        source_start_index: int,
        source_end_index: int,
        query: str,
        user_id: str | None = None,
        max_tokens: int = 800,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        target, user_id = bound(ctx, user_id)
        body = {"user_id": user_id, "source_thread_id": source_thread_id,
                "source_start_index": source_start_index,
                "source_end_index": source_end_index, "query": query, "max_tokens": max_tokens}
        return await anyio.to_thread.run_sync(target.recall_source, _given(body))

    return server


def _given(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def _caller(ctx: Context | None) -> tuple[Principal | None, str | None]:
    """The HTTP caller's principal (set by SecurityMiddleware) and bearer key; stdio: none."""
    try:
        request = ctx.request_context.request if ctx is not None else None
    except ValueError:  # no request context (called outside a request)
        request = None
    if request is None:
        return None, None
    principal = request.scope.get("state", {}).get("principal")
    token = request.headers.get("authorization", "").partition(" ")[2].strip() or None
    return (principal if isinstance(principal, Principal) else None), token


def run_mcp(backend: Backend, transport: str, host: str, port: int,
            settings: Settings | None = None,
            backend_for_key: BackendForKey | None = None) -> None:
    """Serve until stopped: ``stdio`` or ``http`` (streamable HTTP at ``/mcp``, behind
    :class:`query_api.auth.SecurityMiddleware`)."""
    server = build_mcp_server(backend, backend_for_key=backend_for_key)
    if transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app = mcp_http_app(server, settings or Settings(), host, forward=backend_for_key is not None)
    uvicorn.run(app, host=host, port=port, log_level="info")


def mcp_http_app(server: MCPServer, settings: Settings, host: str, forward: bool) -> Any:
    """The streamable HTTP app wrapped in the query service's key / browser checks."""
    from breadcrumb.query_api.auth import ForwardingKeyRing, SecurityMiddleware, is_loopback

    app = server.streamable_http_app(host=host)
    keyring = ForwardingKeyRing(require=not is_loopback(host)) if forward else None
    return SecurityMiddleware(app, settings.with_overrides(host=host), keyring=keyring)

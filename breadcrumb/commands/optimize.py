"""``breadcrumb optimize``: build the HNSW graphs of the embedded vector index now.

Qdrant Edge searches points written since its last ``optimize()`` brute force. The
running service optimizes by itself when enough points are unindexed and writes are
idle (``index_optimize_*`` settings); this command does it on demand: through the
service of the data dir (``POST /v1/admin/optimize``) when one runs, else by opening
the current generation's shards in-process. Cluster mode: the Qdrant server indexes
in its own background optimizers, nothing to do.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from breadcrumb.clients.service import api_key_headers
from breadcrumb.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``optimize`` subcommand."""
    from breadcrumb.commands.options import common_options

    p = sub.add_parser("optimize", help="build the vector index's HNSW graphs now (embedded)")
    common_options(p)
    p.set_defaults(handler=cmd_optimize)


def cmd_optimize(args: argparse.Namespace, settings: Settings) -> int:
    """Optimize via the running service, or in-process; prints a JSON result."""
    from breadcrumb.clients.service import locate

    if settings.mode == "cluster":
        sys.stdout.write("cluster mode: the Qdrant server optimizes in the background\n")
        return 0
    url, lock = locate(settings, args.url)  # the owning service, or the data dir locked here
    try:
        result = _over_http(url) if url else _in_process(settings)
    finally:
        if lock is not None:
            lock.release()
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


def _over_http(url: str) -> dict[str, Any]:
    import httpx

    response = httpx.post(f"{url}/v1/admin/optimize", timeout=3600.0,
                          headers=api_key_headers())
    response.raise_for_status()
    data: dict[str, Any] = response.json()
    return data


def _in_process(settings: Settings) -> dict[str, Any]:
    from breadcrumb.stores.generations.embedded import GenerationCatalog
    from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex

    catalog = GenerationCatalog(settings.data_dir)
    vectors = catalog.paths(catalog.current()).vectors
    config_file = vectors / "memories" / "edge_config.json"
    if not config_file.exists():  # nothing ingested yet
        return {"optimized": False, "seconds": 0.0, "pending_points": 0}
    config = json.loads(config_file.read_text("utf-8"))
    index = QdrantEdgeIndex(vectors, int(config["vectors"]["dense"]["size"]))
    index.ensure()
    try:
        started = time.perf_counter()
        optimized = index.optimize()
        return {"optimized": optimized, "seconds": round(time.perf_counter() - started, 3),
                "pending_points": 0}
    finally:
        index.close()

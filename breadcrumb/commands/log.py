"""``breadcrumb log rewrite``: remove forgotten events' bytes from the Kafka log (cluster).

A forget in cluster mode runs this itself (``query_api.routes.forget``); the command runs
it again, e.g. after a rewrite that found live producers writing the same threads, or
for erasures made before this existed. It reads every partition of ``agent-events``,
``agent-events-dlq`` and ``observations``, and rewrites in place those that hold a record
the tombstones cover (``streams.kafka.log_rewrite``); it prints what it did as JSON.
Embedded mode has no Kafka log: a forget already deletes the ``event_log`` rows there.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import orjson

from breadcrumb.settings import Settings


def register(sub: Any) -> None:
    """Add the ``log`` subcommand and its ``rewrite`` action."""
    log = sub.add_parser("log", help="administer the cluster's event log (Kafka)")
    actions = log.add_subparsers(dest="log_action", required=True)
    rewrite = actions.add_parser(
        "rewrite", help="rewrite agent-events, its DLQ and observations without the "
        "forgotten records")
    rewrite.add_argument("--mode", choices=["embedded", "cluster"], default=None,
                         help="cluster only ($BREADCRUMB_MODE)")
    rewrite.add_argument("--rounds", type=int, default=None, metavar="N",
                         help="rounds per partition when live records land among the "
                              "copies (default 5)")
    rewrite.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if settings.mode != "cluster":
        sys.stderr.write("breadcrumb log rewrite: cluster mode only (embedded: a forget "
                         "deletes the event_log rows itself)\n")
        return 2
    from breadcrumb.infra.cluster_stores import build_sql_store
    from breadcrumb.streams.kafka.log_rewrite import MAX_ROUNDS, LogRewriteError, rewrite_log

    rounds = MAX_ROUNDS if args.rounds is None else args.rounds
    if rounds < 1:
        sys.stderr.write("breadcrumb log rewrite: --rounds must be at least 1\n")
        return 2
    store = build_sql_store(settings)
    try:
        report = asyncio.run(rewrite_log(settings, store, rounds))
    except LogRewriteError as exc:
        sys.stderr.write(f"breadcrumb log rewrite: {exc}\n")
        return 1
    finally:
        store.close()
    sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0

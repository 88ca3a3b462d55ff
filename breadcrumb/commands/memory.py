"""``breadcrumb memory set|audit|show``: manual lifecycle control and inspection (issue 5).

Runs against the data dir / cluster stores of the settings (in-process runtime).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from breadcrumb.infra.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``breadcrumb memory``."""
    from breadcrumb.cli import _common

    p = sub.add_parser("memory", help="show, audit or change a memory's status / tier")
    verbs = p.add_subparsers(dest="memory_command", required=True)
    for name in ("set", "audit", "show"):
        v = verbs.add_parser(name)
        _common(v)
        v.add_argument("memory_id")
        v.add_argument("--user", required=True)
        if name == "set":
            v.add_argument("--status", default=None,
                           choices=["active", "superseded", "archived", "conflicted"])
            v.add_argument("--tier", default=None, choices=["provisional", "confirmed", "active"])
            v.add_argument("--reason", required=True)
            v.add_argument("--actor", default="cli")
        v.set_defaults(handler=cmd_memory)


def cmd_memory(args: argparse.Namespace, settings: Settings) -> int:
    """Dispatch ``memory set|audit|show``; prints JSON."""
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.query_api.errors import ApiError
    from breadcrumb.query_api.routes_memories import (
        MemoryPatch,
        audit_view,
        memory_with_history,
        patch_memory,
    )

    runtime = build_runtime(settings)
    try:
        out: Any
        if args.memory_command == "set":
            body = MemoryPatch(user_id=args.user, status=args.status, tier=args.tier,
                               reason=args.reason, actor=args.actor)
            out = patch_memory(runtime, args.memory_id, body)
        elif args.memory_command == "audit":
            out = audit_view(runtime, args.user, args.memory_id)
        else:
            out = memory_with_history(runtime, args.user, args.memory_id)
    except ApiError as exc:
        sys.stderr.write(f"breadcrumb: {exc.body()['error']['message']}\n")
        return 1
    finally:
        runtime.stop()
    sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    return 0

"""``breadcrumb memory set|audit|show``: manual lifecycle control and inspection (issue 5);
``list|versions|forget`` (issue 26) are in ``commands/memory_list.py``.

Talks to the service that owns the data dir when one runs (``--url``, or the
``breadcrumb serve`` of the data dir), else opens the data dir / cluster stores here.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from breadcrumb.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``breadcrumb memory``."""
    from breadcrumb.commands.options import common_options

    p = sub.add_parser("memory", help="show, audit or change a memory's status / tier")
    verbs = p.add_subparsers(dest="memory_command", required=True)
    helps = {"set": "change a memory's status or tier (audited)",
             "audit": "list a memory's recorded changes", "show": "print a memory as JSON"}
    for name in ("set", "audit", "show"):
        v = verbs.add_parser(name, help=helps[name])
        common_options(v)
        v.add_argument("memory_id", help="the memory's id (from recall)")
        v.add_argument("--user", default=None,
                       help="tenant (user_id) of the memory (default: $BREADCRUMB_USER_ID, "
                            "'local')")
        if name == "set":
            v.add_argument("--status", default=None,
                           choices=["active", "superseded", "archived", "conflicted"],
                           help="new status")
            v.add_argument("--tier", default=None, choices=["provisional", "confirmed", "active"],
                           help="new tier")
            v.add_argument("--reason", required=True, help="why (kept in the audit log)")
            v.add_argument("--actor", default="cli", help="who made the change (cli)")
        v.set_defaults(handler=cmd_memory)
    from breadcrumb.commands.memory_list import add_verbs

    add_verbs(verbs)  # issue 26: list, versions, forget


def cmd_memory(args: argparse.Namespace, settings: Settings) -> int:
    """Dispatch ``memory set|audit|show``; prints JSON. Through the service that owns the
    data dir when one runs (its stores are never opened twice), else in-process."""
    from breadcrumb.clients.service import api_key_headers, locate

    url, lock = locate(settings, args.url)
    if not (url and api_key_headers()):  # with a key, the service fills in the key's tenant
        args.user = args.user or settings.user_id
    try:
        out = _over_http(url, args) if url else _in_process(settings, args)
    except _Refused as exc:
        sys.stderr.write(f"breadcrumb: {exc}\n")
        return 1
    finally:
        if lock is not None:
            lock.release()
    sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    return 0


class _Refused(Exception):
    """The request was refused (unknown memory, invalid change): its message."""


def _over_http(url: str, args: argparse.Namespace) -> Any:
    import httpx

    from breadcrumb.clients.service import api_key_headers, key_refusal, unreachable

    path = f"/v1/memories/{args.memory_id}"
    headers = api_key_headers()
    try:
        with httpx.Client(base_url=url, timeout=120, headers=headers) as http:
            tenant = {"user_id": args.user} if args.user else {}
            if args.memory_command == "set":
                body = {**tenant, "status": args.status, "tier": args.tier,
                        "reason": args.reason, "actor": args.actor}
                response = http.patch(path, json=body)
            elif args.memory_command == "audit":
                response = http.get(f"{path}/audit", params=tenant)
            else:
                response = http.get(path, params=tenant)
    except httpx.TransportError as exc:
        raise unreachable(url, exc) from None
    if response.status_code == 401:
        raise key_refusal(url, headers)
    if response.status_code >= 400:
        try:
            message = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = response.text
        raise _Refused(message)
    return response.json()


def _in_process(settings: Settings, args: argparse.Namespace) -> Any:
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.query_api.errors import ApiError
    from breadcrumb.query_api.routes.memories import (
        MemoryPatch,
        audit_view,
        memory_with_history,
        patch_memory,
    )

    runtime = build_runtime(settings)
    try:
        if args.memory_command == "set":
            body = MemoryPatch(user_id=args.user, status=args.status, tier=args.tier,
                               reason=args.reason, actor=args.actor)
            return patch_memory(runtime, args.memory_id, body)
        if args.memory_command == "audit":
            return audit_view(runtime, args.user, args.memory_id)
        return memory_with_history(runtime, args.user, args.memory_id)
    except ApiError as exc:
        raise _Refused(exc.body()["error"]["message"]) from exc
    finally:
        runtime.stop()

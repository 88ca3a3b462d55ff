"""``breadcrumb memory list | versions | forget`` (issue 26), added to ``breadcrumb memory``.

``list`` pages through the memories with the API's filters (``--cursor`` from the last
line); ``versions`` prints the supersession chain and each exact value's history;
``forget`` erases a memory, ``--thread T`` a thread, ``--tenant`` the whole tenant, and
asks for ``--yes`` first (an erasure cannot be undone).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from breadcrumb.commands.browse import (
    USER_HELP,
    call,
    memory_lines,
    resolve_user,
    run,
    version_lines,
)
from breadcrumb.settings import Settings

FILTER_HELP = {
    "project": "only memories of this project_id",
    "thread": "only memories of this thread_id",
    "tag": "only memories with this tag",
    "text": "only memories whose summary or hints contain this text",
    "cursor": "the next page: the cursor printed at the end of the previous one",
}


def add_verbs(verbs: argparse._SubParsersAction) -> None:
    """Add ``list``, ``versions`` and ``forget`` to the ``memory`` subcommand."""
    from breadcrumb.commands.options import common_options

    lister = verbs.add_parser("list", help="list memories (filters, pages, sorts)")
    common_options(lister)
    lister.add_argument("--user", default=None, help=USER_HELP)
    for name in ("project", "thread", "tag", "text", "cursor"):
        lister.add_argument(f"--{name}", default=None, help=FILTER_HELP[name])
    lister.add_argument("--status", default=None, help="only memories with this status",
                        choices=["active", "superseded", "archived", "conflicted"])
    lister.add_argument("--tier", default=None, choices=["provisional", "confirmed", "active"],
                        help="only memories in this tier")
    lister.add_argument("--sort", default="time", choices=["time", "importance", "hits"],
                        help="newest first, most important first or most used first (time)")
    lister.add_argument("--limit", type=int, default=50, help="memories per page (50)")
    lister.add_argument("--json", action="store_true", help="print the API's JSON answer")
    lister.set_defaults(handler=cmd_list)

    versions = verbs.add_parser("versions", help="a memory's versions and its values' history")
    common_options(versions)
    versions.add_argument("memory_id", help="a memory id (shown by recall and memory list)")
    versions.add_argument("--user", default=None, help=USER_HELP)
    versions.add_argument("--json", action="store_true", help="print the API's JSON answer")
    versions.set_defaults(handler=cmd_versions)

    forget = verbs.add_parser("forget", help="erase a memory, a thread or a whole tenant")
    common_options(forget)
    forget.add_argument("memory_id", nargs="?", default=None,
                        help="the memory to erase (or --thread, or --tenant)")
    forget.add_argument("--user", default=None, help=USER_HELP)
    forget.add_argument("--thread", default=None, help="erase this whole thread")
    forget.add_argument("--tenant", action="store_true", help="erase everything of --user")
    forget.add_argument("--yes", action="store_true", help="confirm: this cannot be undone")
    forget.add_argument("--json", action="store_true", help="print the API's JSON answer")
    forget.set_defaults(handler=cmd_forget)


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    """``memory list``."""
    resolve_user(settings, args)
    from breadcrumb.query_api.routes.browse import list_view

    params = {"user_id": args.user, "project": args.project, "thread": args.thread,
              "status": args.status, "tier": args.tier, "tag": args.tag, "text": args.text,
              "sort": args.sort, "limit": args.limit, "cursor": args.cursor}
    local_params = {k: v for k, v in params.items() if k != "user_id"}

    def fetch() -> Any:
        return call(settings, args, "GET", "/v1/memories", params, None,
                    lambda rt: list_view(rt, args.user, **local_params))

    return run(fetch, args.json, memory_lines)


def cmd_versions(args: argparse.Namespace, settings: Settings) -> int:
    """``memory versions``."""
    resolve_user(settings, args)
    from breadcrumb.query_api.routes.browse import versions_view

    def fetch() -> Any:
        return call(settings, args, "GET", f"/v1/memories/{args.memory_id}/versions",
                    {"user_id": args.user}, None,
                    lambda rt: versions_view(rt, args.user, args.memory_id))

    return run(fetch, args.json, version_lines)


def cmd_forget(args: argparse.Namespace, settings: Settings) -> int:
    """``memory forget``: exactly one of MEMORY_ID, ``--thread``, ``--tenant``; ``--yes``."""
    if args.tenant and not args.user:
        sys.stderr.write("breadcrumb memory forget --tenant: name the tenant to erase with "
                         "--user (it is never taken from a default)\n")
        return 2
    resolve_user(settings, args)

    from breadcrumb.query_api.routes.forget import ForgetRequest, forget_scope

    named = sum([args.memory_id is not None, args.thread is not None, args.tenant])
    if named != 1:
        sys.stderr.write("breadcrumb: give exactly one of MEMORY_ID, --thread T, --tenant\n")
        return 2
    what = (f"memory {args.memory_id}" if args.memory_id else
            f"thread {args.thread}" if args.thread else f"every event and memory of {args.user}")
    if not args.yes:
        sys.stderr.write(f"breadcrumb: this erases {what} for good (raw events, memories, "
                         "vectors, archives); run again with --yes to confirm\n")
        return 2
    body = {"user_id": args.user, "memory_id": args.memory_id, "thread_id": args.thread,
            "tenant": args.tenant, "actor": "cli"}
    request = ForgetRequest(**body)

    def fetch() -> Any:
        return call(settings, args, "POST", "/v1/forget", None, body,
                    lambda rt: forget_scope(rt, request.scope(), "cli"))

    def text(answer: dict[str, Any]) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(answer["counts"].items()) if v)
        return f"erased {what} at {answer['at']} ({counts or 'nothing was stored'})"

    return run(fetch, args.json, text)

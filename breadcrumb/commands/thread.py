"""``breadcrumb thread list | show`` (issue 26): the tenant's threads, and a thread's raw
events verbatim (``--range A:B`` for a source range, as recall names them)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from breadcrumb.commands.browse import USER_HELP, call, resolve_user, run
from breadcrumb.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``breadcrumb thread``."""
    from breadcrumb.commands.options import common_options

    p = sub.add_parser("thread", help="list threads, print a thread's events")
    verbs = p.add_subparsers(dest="thread_command", required=True)
    lister = verbs.add_parser("list", help="threads: agent, project, events, times, open window")
    common_options(lister)
    lister.add_argument("--user", default=None, help=USER_HELP)
    lister.add_argument("--project", default=None, help="only threads of this project_id")
    lister.add_argument("--limit", type=int, default=100, help="threads per page (100)")
    lister.add_argument("--after", default=None, help="the last thread id of the page before")
    lister.add_argument("--json", action="store_true", help="print the API's JSON answer")
    lister.set_defaults(handler=cmd_list)
    show = verbs.add_parser("show", help="a thread's raw events, verbatim")
    common_options(show)
    show.add_argument("thread_id", help="the thread (see thread list)")
    show.add_argument("--user", default=None, help=USER_HELP)
    show.add_argument("--range", default=None, help="A:B, both indices included (default all)")
    show.add_argument("--json", action="store_true", help="print the API's JSON answer")
    show.set_defaults(handler=cmd_show)


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    """``thread list``."""
    resolve_user(settings, args)
    from breadcrumb.query_api.routes.browse import threads_view

    params = {"user_id": args.user, "project": args.project, "limit": args.limit,
              "after": args.after}

    def fetch() -> Any:
        return call(settings, args, "GET", "/v1/threads", params, None,
                    lambda rt: threads_view(rt, args.user, args.project, args.limit, args.after))

    return run(fetch, args.json, thread_lines)


def thread_lines(answer: dict[str, Any]) -> str:
    """One thread a line: id, agent, project, events, first → last time, memories, window."""
    out = []
    for t in answer["threads"]:
        window = t.get("open_window")
        open_part = f"  open window: {window['events']} event(s)" if window else ""
        out.append(f"{t['thread_id']}  agent {t['agent_id'] or '-'}  project "
                   f"{t['project_id'] or '-'}  {t['event_count']} events "
                   f"[{t['first_index']}..{t['last_index']}]  {t['first_ts'][:19]} → "
                   f"{t['last_ts'][:19]}  memories {t.get('memories', 0)}{open_part}")
    if not out:
        out.append("(no threads)")
    if answer.get("next_after"):
        out.append(f"more: --after {answer['next_after']}")
    return "\n".join(out)


def parse_range(text: str | None) -> tuple[int, int | None]:
    """``A:B`` → (A, B); ``A:`` → (A, None); None → (0, None). ValueError otherwise."""
    if text is None:
        return 0, None
    start, sep, end = text.partition(":")
    if not sep or not start.strip().isdigit() or (end.strip() and not end.strip().isdigit()):
        raise ValueError(f"--range must be A:B with whole numbers, not {text!r}")
    a, b = int(start), int(end) if end.strip() else None
    if b is not None and b < a:
        raise ValueError(f"--range {text}: the end is before the start")
    return a, b


def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    """``thread show``: every page of the range, in index order."""
    resolve_user(settings, args)
    from breadcrumb.query_api.routes.threads import thread_page

    try:
        start, end = parse_range(args.range)
    except ValueError as exc:
        sys.stderr.write(f"breadcrumb: {exc}\n")
        return 2
    path = f"/v1/threads/{args.thread_id}/events"

    def page(at: int) -> Any:
        params = {"user_id": args.user, "start": at, "end": end, "paged": "true"}
        return call(settings, args, "GET", path, params, None,
                    lambda rt: thread_page(rt, args.user, args.thread_id, at, end, None))

    def fetch() -> Any:
        events: list[dict[str, Any]] = []
        at: int | None = start
        while at is not None:
            got = page(at)
            events += got["events"]
            at = got["next_start"]
        return {"thread_id": args.thread_id, "events": events}

    return run(fetch, args.json, event_lines)


def event_lines(answer: dict[str, Any]) -> str:
    """Each event: ``[index] time role/kind (tool): content`` (content verbatim)."""
    out = []
    for e in answer["events"]:
        tool = f" ({e['tool']})" if e.get("tool") else ""
        head = f"[{e.get('index')}] {e['ts']} {e['role']}/{e['kind']}{tool}:"
        content = str(e["content"])
        out.append(f"{head} {content}" if "\n" not in content else
                   head + "\n" + "\n".join("    " + line for line in content.splitlines()))
    return "\n".join(out) if out else f"(no events in {answer['thread_id']} for this range)"

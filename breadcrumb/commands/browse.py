"""What ``breadcrumb memory list|versions|forget`` and ``breadcrumb thread list|show``
share (issue 26): one call, over HTTP to the service that owns the data dir (or ``--url``)
or in-process on the stores, and the plain-text printing.

In-process calls run the same functions as the routes (``query_api.routes.browse``,
``query_api.routes.forget``); the person at the terminal owns the data dir, so no key
applies there. Over HTTP the request carries ``--api-key`` / ``$BREADCRUMB_API_KEY``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import orjson

from breadcrumb.settings import Settings


class Refused(Exception):
    """The service (or the stores) refused: its one-line message."""


Local = Callable[[Any], Any]  # runtime -> answer


USER_HELP = ("tenant (user_id) (default: the API key's tenant, else BREADCRUMB_USER_ID, "
             "else 'local')")


def resolve_user(settings: Settings, args: argparse.Namespace) -> str:
    """``--user``, or the tenant of the key sent to the service that owns the data dir
    (or ``--url``), or ``BREADCRUMB_USER_ID``: the one rule of every command (issue 24)."""
    from breadcrumb.clients.service import default_user, running_server

    if not args.user:
        args.user = default_user(settings, None, args.url or running_server(settings))
    return str(args.user)


def call(settings: Settings, args: argparse.Namespace, method: str, path: str,
         params: dict[str, Any] | None, body: dict[str, Any] | None, local: Local) -> Any:
    """The answer of ``method path`` from the running service, or of ``local(runtime)``."""
    from breadcrumb.clients.service import locate

    url, lock = locate(settings, args.url)  # every caller's sub-command has common_options
    try:
        return _http(url, method, path, params, body) if url else _local(settings, local)
    finally:
        if lock is not None:
            lock.release()


def _http(url: str, method: str, path: str, params: dict[str, Any] | None,
          body: dict[str, Any] | None) -> Any:
    import httpx

    from breadcrumb.clients.service import api_key_headers

    query = {k: v for k, v in (params or {}).items() if v is not None}
    with httpx.Client(base_url=url, timeout=300, headers=api_key_headers()) as http:
        response = http.request(method, path, params=query, json=body)
    if response.status_code >= 400:
        try:
            message = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = response.text.strip()[:300]
        raise Refused(f"{response.status_code}: {message}")
    return response.json()


def _local(settings: Settings, local: Local) -> Any:
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.query_api.errors import ApiError
    from breadcrumb.stores.sql.browse import CursorError

    runtime = build_runtime(settings)
    try:
        return local(runtime)
    except ApiError as exc:
        raise Refused(f"{exc.status}: {exc.body()['error']['message']}") from exc
    except (CursorError, ValueError) as exc:
        raise Refused(f"422: {exc}") from exc
    finally:
        runtime.stop()


def run(fn: Callable[[], Any], as_json: bool, text: Callable[[Any], str]) -> int:
    """Print the answer of ``fn`` (JSON or text); a refusal is one line on stderr, exit 1."""
    try:
        answer = fn()
    except Refused as exc:
        sys.stderr.write(f"breadcrumb: {exc}\n")
        return 1
    if as_json:
        sys.stdout.write(orjson.dumps(answer, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(text(answer) + "\n")
    return 0


def one_line(text: str, width: int = 100) -> str:
    """A summary on one line of at most ``width`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def memory_lines(answer: dict[str, Any]) -> str:
    """``memory list`` for people: one memory a line, then how to get the next page."""
    out = []
    for m in answer["memories"]:
        r = m["source_range"]
        out.append(f"{m['id']}  {m['status']}/{m['tier']}  {m['created_at'][:19]}  "
                   f"hits {m.get('hit_count', 0)}  {r['thread_id']} "
                   f"[{r['start_index']}..{r['end_index']}]")
        out.append(f"    {one_line(m['summary'])}")
    if not out:
        out.append("(no memories)")
    if answer.get("next_cursor"):
        out.append(f"more: --cursor {answer['next_cursor']}")
    return "\n".join(out)


def version_lines(answer: dict[str, Any]) -> str:
    """``memory versions`` for people: the chain, then each exact value's history."""
    out = ["versions (oldest first):"]
    for v in answer["versions"]:
        mark = " <" if v["id"] == answer["memory_id"] else ""
        out.append(f"  {v['created_at'][:19]}  {v['id']}  {v['status']}/{v['tier']}{mark}")
        out.append(f"      {one_line(v['summary'])}")
    for fact in answer.get("facts", []):
        out.append(f"value {fact['key']}:")
        out.extend(f"  {x['ts'][:19]}  {x['value']}  ({x['state']}, memory {x['memory_id']})"
                   for x in fact["versions"])
    return "\n".join(out)

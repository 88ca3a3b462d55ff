"""breadcrumb: keep what AI agents say and do; recall it verbatim.

Commands: serve, ingest, recall, import, mcp, watch, keys, memory, ... (see
`breadcrumb COMMAND --help`). The HTTP API is described in docs/contract/API.md; the
CLI (exit codes, keys, logging) in docs/cli.md.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from breadcrumb import preflight
from breadcrumb.clients import service as local_client
from breadcrumb.commands.options import common_options
from breadcrumb.extras import missing_extra
from breadcrumb.logs import LEVELS, configure_logging, uvicorn_log_config
from breadcrumb.settings import Settings
from breadcrumb.stores import data_dir

#: commands that build an embedder (and so need a working ``--embedder``) unless ``--url``
EMBEDDING = frozenset({"serve", "ingest", "recall", "import", "mcp", "memory", "worker",
                       "replay", "optimize"})
#: commands whose default log level is ``info`` (long-running services); others: ``warning``
SERVICES = frozenset({"serve", "worker", "mcp", "watch"})


def version() -> str:
    """The installed package's version."""
    from importlib import metadata

    try:
        return metadata.version("breadcrumb-memory")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {name: getattr(args, name, None) for name in (
        "data_dir", "host", "port", "mode", "embedder", "ssl_certfile", "ssl_keyfile")}


def _settings(args: argparse.Namespace) -> Settings:
    data_dir.set_role(f"breadcrumb {args.command}")  # named in the data dir's lock file
    return Settings().with_overrides(**_overrides(args))


def _logging_options(p: argparse.ArgumentParser, top: bool = False) -> None:
    """``-v`` and ``--log-level`` on the main parser and (without defaults) every command."""
    default: Any = None if top else argparse.SUPPRESS
    p.add_argument("-v", "--verbose", action="store_true", default=False if top else default,
                   help="log everything, client libraries' requests included (= --log-level "
                        "debug)")
    p.add_argument("--log-level", choices=LEVELS, default=default,
                   help="log level (default: info for serve, worker, mcp and watch; warning "
                        "for the other commands)")


class _Deprecated(argparse.Action):
    """An old spelling kept working, with a one-line notice naming the new one."""

    def __init__(self, *args: Any, new: str = "", **kwargs: Any) -> None:
        self.new = new
        super().__init__(*args, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        sys.stderr.write(f"breadcrumb: {option_string} is deprecated, use {self.new}\n")
        setattr(namespace, self.dest, values)


def _add_builtin(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="run the query service (and, embedded, the processors)")
    common_options(serve)
    serve.add_argument("--host", default=None,
                       help="address to listen on (default: $BREADCRUMB_HOST, 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None,
                       help="port to listen on (default: $BREADCRUMB_PORT, 8765)")
    serve.add_argument("--ssl-certfile", type=Path, default=None,
                       help="serve HTTPS with this PEM certificate (with --ssl-keyfile)")
    serve.add_argument("--ssl-keyfile", type=Path, default=None,
                       help="the PEM private key of --ssl-certfile")

    ingest = sub.add_parser("ingest", help="feed events from a JSONL file and wait until stored")
    common_options(ingest)
    ingest.add_argument("file", type=Path, help="JSON Lines file, one Event per line")
    ingest.add_argument("--no-flush", action="store_true",
                        help="leave the threads' open windows open (default: flush at the end)")
    ingest.add_argument("--batch", type=int, default=500, help="events per request (500)")
    ingest.add_argument("--timeout", type=float, default=900.0,
                        help="seconds to wait until every event is stored (900)")

    recall = sub.add_parser("recall", help="answer a question from memory (RecallResponse)")
    common_options(recall)
    recall.add_argument("query", help="the question in plain words")
    recall.add_argument("--user", default=None,
                        help="tenant (user_id) to search (default: $BREADCRUMB_USER_ID, 'local')")
    recall.add_argument("--project", default=None, help="only memories of this project_id")
    recall.add_argument("--k", type=int, default=5, help="how many memories to list (5)")
    recall.add_argument("--max-tokens", type=int, default=800,
                        help="token budget of the verbatim evidence (800)")
    modes = ["auto", "summary", "source"]
    recall.add_argument("--recall-mode", dest="recall_mode", choices=modes, default="auto",
                        help="auto: evidence when the question needs an exact value; summary: "
                             "memories only; source: always cut evidence lines")
    recall.add_argument("--mode-recall", dest="recall_mode", choices=modes, action=_Deprecated,
                        new="--recall-mode", help=argparse.SUPPRESS)
    recall.add_argument("--json", action="store_true", help="print the RecallResponse as JSON")
    # issue 26: request fields recall already has
    recall.add_argument("--brief", action="store_true", help="the compact brief view")
    recall.add_argument("--thread", default=None, help="only memories of this thread")
    recall.add_argument("--tag", action="append", default=None,
                        help="only memories with this tag (repeat for more)")
    recall.add_argument("--include-superseded", action="store_true",
                        help="also list superseded versions")
    # issue 28: recall in time (docs/recall-in-time.md)
    recall.add_argument("--as-of", dest="as_of", type=_iso_time, default=None, metavar="ISO",
                        help="answer as things stood then, e.g. 2026-03-12T00:00:00Z")
    recall.add_argument("--now", type=_iso_time, default=None, metavar="ISO",
                        help="what 'yesterday', '3週間前' count from (default: now)")
    # issue 47: a look is no use (no hit, no TTL touch, no promotion)
    recall.add_argument("--read-only", dest="read_only", action="store_true",
                        help="only look: the memories it returns gain no hit and no touch")


def _iso_time(text: str) -> str:
    """An ISO 8601 time (``--as-of``, ``--now``), checked here: a bad one is a usage error."""
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 time: {text!r} (e.g. 2026-03-12T00:00:00Z)") from None
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="breadcrumb", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"breadcrumb {version()}")
    _logging_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_builtin(sub)
    from breadcrumb.commands import register_all

    register_all(sub)
    for command in sub.choices.values():
        _with_logging_options(command)
    return parser


def _with_logging_options(p: argparse.ArgumentParser) -> None:
    nested = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    for action in nested:
        for child in action.choices.values():
            _with_logging_options(child)
    if not nested:
        _logging_options(p)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = _settings(args)
    except ValidationError as exc:
        print(f"breadcrumb: {preflight.settings_message(exc, _overrides(args))}",
              file=sys.stderr)
        return 2
    except ValueError as exc:
        from breadcrumb.settings import settings_error_line

        print(f"breadcrumb: invalid settings: {settings_error_line(exc)}", file=sys.stderr)
        return 2
    default_level = "info" if args.command in SERVICES else "warning"
    configure_logging(settings, verbose=args.verbose, level=args.log_level or default_level,
                      quiet_libraries=not (args.verbose or args.log_level))
    local_client.use_api_key(getattr(args, "api_key", None))
    builtin = {"serve": cmd_serve, "ingest": cmd_ingest, "recall": cmd_recall}
    handler = builtin.get(args.command) or args.handler
    try:
        _preflight(args, settings)
        return int(handler(args, settings))
    except preflight.Refused as exc:
        print(f"breadcrumb: {exc}", file=sys.stderr)
        return exc.code
    except (local_client.ClientError, data_dir.StartupError) as exc:
        print(f"breadcrumb: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("breadcrumb: interrupted", file=sys.stderr)
        return 130
    except ModuleNotFoundError as exc:  # a command whose extra is not installed
        message = missing_extra(exc)
        if message is None:
            raise
        print(f"breadcrumb {args.command}: {message}", file=sys.stderr)
        return 2


#: A module each command cannot start without (its extra, named by ``missing_extra``).
NEEDS = {"serve": "uvicorn", "worker": "faust", "mcp": "mcp"}


def _preflight(args: argparse.Namespace, settings: Settings) -> None:
    """What can be refused before anything is created (see :mod:`breadcrumb.preflight`)."""
    url = getattr(args, "url", None)
    if args.command in NEEDS:  # a missing extra is named before any data dir is made
        import importlib

        importlib.import_module(NEEDS[args.command])
    if args.command in EMBEDDING and not url:
        preflight.check_embedder(settings)
    if args.command == "serve":
        preflight.check_port_free(settings.host, settings.port)
    note = preflight.check_data_dir(args.command, settings, url)
    if note:
        print(note, file=sys.stderr)


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.query_api.app import create_app, settle_heap

    if refused_bind(settings):
        return 2
    if (settings.ssl_certfile is None) != (settings.ssl_keyfile is None):
        sys.stderr.write("breadcrumb: give both --ssl-certfile and --ssl-keyfile\n")
        return 2
    lock = None
    if settings.mode == "embedded":  # one owner per data dir; a second serve stops here
        lock = data_dir.acquire(settings.data_dir)
        scheme = "https" if settings.ssl_certfile else "http"
        lock.set_url(f"{scheme}://{_client_host(settings.host)}:{settings.port}")
    try:
        if settings.mode == "cluster":  # one line naming the setting when a service is absent
            from breadcrumb.infra.preflight import cluster_preflight, explained

            cluster_preflight(settings)
            with explained(settings):
                runtime = build_runtime(settings)
        else:
            runtime = build_runtime(settings)
        app = create_app(runtime)
        marker = None if lock else local_client.write_server_marker(settings)
        settle_heap()
        _exit_cleanly_on_sigterm()
        try:
            config = uvicorn.Config(
                app, host=settings.host, port=settings.port, log_level=_uvicorn_level(args),
                log_config=uvicorn_log_config(settings), timeout_graceful_shutdown=5,
                ssl_certfile=settings.ssl_certfile, ssl_keyfile=settings.ssl_keyfile)
            closing_server(config, app).run()
        finally:
            if marker is not None:
                marker.unlink(missing_ok=True)
    finally:
        if lock is not None:
            lock.release()
    return 0


def closing_server(config: Any, app: Any) -> Any:
    """A uvicorn server that ends the dashboard's live streams as it starts shutting down
    (issue 47): uvicorn waits for open responses before it stops, and an open page's
    stream would hold a SIGTERM for the graceful timeout, then be cancelled with a
    traceback. Its shutdown sets the streams' stop first, in the server's loop."""
    import uvicorn

    from breadcrumb.query_api.routes.dashboard import close_streams

    class ClosingServer(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            close_streams(app)
            await super().shutdown(sockets=sockets)

    return ClosingServer(config)


def _exit_cleanly_on_sigterm() -> None:
    """uvicorn re-raises the SIGTERM it handled once it has shut down; with the default
    action that kills the process before ``finally`` blocks run (``server.json`` and the
    lock file's URL were left behind). As ``SystemExit(0)`` they run."""
    def stop(_number: int, _frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)


def _uvicorn_level(args: argparse.Namespace) -> str:
    return "debug" if args.verbose else (args.log_level or "info")


def _client_host(host: str) -> str:
    """Where a local client reaches a service bound to ``host`` (wildcards → loopback)."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    from breadcrumb.jsonl import read_records

    try:
        records, bad = read_records(args.file)
    except OSError as exc:
        raise preflight.Refused(f"cannot read {args.file} ({exc.strerror}): check the path"
                                ) from None
    backend = local_client.connect(settings, args.url)
    try:
        report = backend.ingest([value for _, value in records], flush=not args.no_flush,
                                batch=args.batch, timeout=args.timeout)
    finally:
        backend.close()
    # every rejection names its 1-based line in the file, never the contract's 0-based
    # ``position`` among the events sent (blank and unparsable lines are not sent)
    from breadcrumb import rejections

    refused = rejections.by_line(report["rejected"], lambda i: records[i][0])
    report["rejected"] = rejections.in_file_order(bad + refused)
    print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    rejections.say("ingest", report["rejected"], sys.stderr, args.file.name)
    return 0 if not report["rejected"] else 1


def cmd_recall(args: argparse.Namespace, settings: Settings) -> int:
    backend = local_client.connect(settings, args.url)
    # No --user: the key's own tenant over HTTP with a key, else the default tenant.
    keyed = isinstance(backend, local_client.HttpBackend) and "Authorization" in \
        backend.http.headers
    user = args.user or (None if keyed else settings.user_id)
    body = {"user_id": user, "query": args.query, "project_id": args.project, "k": args.k,
            "max_tokens": args.max_tokens, "mode": args.recall_mode,
            # issue 26: only when given
            "thread_id": args.thread, "tags": args.tag,
            "include_superseded": args.include_superseded or None,
            "view": "brief" if args.brief else None,
            "as_of": args.as_of, "now": args.now, "read_only": args.read_only or None}
    try:
        answer = backend.recall({k: v for k, v in body.items() if v is not None})
    finally:
        backend.close()
    if args.json:
        print(orjson.dumps(answer, option=orjson.OPT_INDENT_2).decode())
    elif answer.get("view") == "brief":
        print(answer["text"])
    else:
        print(format_answer(answer))
    if not answer.get("memories") and not answer.get("evidence"):
        who = f"user '{user}'" if user else "this key's tenant"
        default = "the key's own tenant" if keyed else f"'{settings.user_id}'"
        sys.stderr.write(f"breadcrumb: {who} holds no memory that matches; a new or misspelled "
                         f"tenant holds nothing (check --user; the default is {default})\n")
    return 0


def refused_bind(settings: Settings) -> bool:
    """True (and why, on stderr) when the API must not listen on ``settings.host``."""
    from breadcrumb.query_api.auth import open_bind_refusal

    try:
        reason = open_bind_refusal(settings)
    except Exception as exc:  # the key store cannot be read: fail closed, say why
        reason = f"cannot read the API keys to decide whether {settings.host} may be bound: {exc}"
    if reason:
        sys.stderr.write(f"breadcrumb: {reason}\n")
    return reason is not None


def read_jsonl(path: Path) -> tuple[list[Any], list[dict[str, Any]]]:
    """Parse one JSON value per line; unparsable lines are reported, not dropped silently."""
    from breadcrumb.jsonl import read_records

    records, bad = read_records(path)
    return [value for _, value in records], bad


def format_answer(answer: dict[str, Any]) -> str:
    """A RecallResponse for people: memories with their ranges, then verbatim evidence."""
    out = [f"query: {answer['query']}",
           f"classification: {answer['classification']} (level {answer['level']})"]
    for i, mem in enumerate(answer["memories"], start=1):
        rng = mem["source_range"]
        out.append(f"\n[{i}] score {mem['score']:.3f}  {mem['status']}/{mem['tier']}  "
                   f"source_range {rng['thread_id']} [{rng['start_index']}..{rng['end_index']}]"
                   f"  id {mem['id']}")
        out.append(f"    {mem['summary']}")
    for ev in answer["evidence"]:
        out.append(f"\nevidence from {ev['source_thread_id']} "
                   f"[{ev['source_start_index']}..{ev['source_end_index']}] "
                   f"events {', '.join(ev['matched_event_ids'])}:")
        out.extend("    | " + line for line in ev["extracted_text"].splitlines())
    out.append(f"\ntoken_cost {answer['token_cost']}, latency {answer['latency_ms']} ms")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())

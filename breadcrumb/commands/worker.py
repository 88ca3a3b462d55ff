"""``breadcrumb worker``: the Faust stream processors of cluster mode (the entry point).

Builds the worker's ports (``infra.cluster``), the Faust app (``streams.kafka.app``) and,
with ``--serve-api``, the HTTP query service in the same event loop. This is the only
place that joins streams/ with query_api/ and infra/; streams/ imports neither.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from breadcrumb.settings import Settings

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    from breadcrumb.commands.options import common_options

    worker = sub.add_parser("worker", help="run the stream processors on Kafka (cluster mode)")
    common_options(worker)
    worker.add_argument("--loglevel", default="info", help="Faust's own log level (info)")
    worker.add_argument("--serve-api", action="store_true",
                        help="also serve the HTTP API in this process (needed when Qdrant runs "
                             "in qdrant-client local mode, which allows one process only)")
    worker.add_argument("--host", default=None, help="--serve-api: address (127.0.0.1)")
    worker.add_argument("--port", type=int, default=None, help="--serve-api: port (8765)")
    worker.set_defaults(handler=cmd_worker)


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    from breadcrumb.cli import refused_bind
    from breadcrumb.infra.preflight import cluster_preflight

    settings = settings.with_overrides(mode="cluster", host=args.host, port=args.port)
    if args.serve_api and refused_bind(settings):
        return 2  # no key exists: the API serves loopback only
    cluster_preflight(settings)  # one line naming the setting when a service is not there
    settings = settings.with_overrides(worker_web_port=web_port(settings))
    run_worker(settings, loglevel=args.loglevel, serve_api=args.serve_api)
    return 0


DEFAULT_WEB_PORT = 6066  # Faust's


def _port_free(host: str, port: int) -> bool:
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def web_port(settings: Settings) -> int:
    """The port of the worker's web server: ``worker_web_port`` when set (refusing, in one
    line, when it is taken), else 6066, or a free port when another process holds 6066."""
    import socket

    from breadcrumb.stores.data_dir import StartupError

    host = settings.worker_web_host
    if settings.worker_web_port is not None:
        if not _port_free(host, settings.worker_web_port):
            raise StartupError(f"port {settings.worker_web_port} on {host} is taken "
                               "(BREADCRUMB_WORKER_WEB_PORT; another worker on this host?): "
                               "set another port, or unset it to pick a free one")
        return settings.worker_web_port
    if _port_free(host, DEFAULT_WEB_PORT):
        return DEFAULT_WEB_PORT
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port = int(probe.getsockname()[1])
    log.info("worker web server: port %s on %s is taken (another worker?); using %s "
             "(set BREADCRUMB_WORKER_WEB_PORT to choose)", DEFAULT_WEB_PORT, host, port)
    return port


def run_worker(settings: Settings, loglevel: str = "info", serve_api: bool = False) -> None:
    """Declare the topics, then run the Faust worker until stopped.

    With ``serve_api`` the HTTP query service runs in the worker's event loop too, sharing
    its vector index (qdrant-client local mode allows one process per folder).
    """
    import faust

    from breadcrumb.infra.cluster import build_worker_parts, declare_topics
    from breadcrumb.infra.cluster_stores import (
        group_members,
        split_store_reason,
        store_client_id,
    )
    from breadcrumb.stores.generations.cluster import ClusterCatalog, generation_settings
    from breadcrumb.streams.kafka.app import create_app
    from breadcrumb.streams.kafka.replay import fail_abandoned

    asyncio.run(declare_topics(settings))
    catalog = ClusterCatalog(settings)
    fail_abandoned(catalog, settings.replay_stale_seconds)  # a replay killed mid-way
    name = catalog.current()  # the alias: which generation this worker fills
    gen = generation_settings(settings, name)
    log.info("worker fills generation %s (consumer group %s)", name, gen.worker_id)
    members = asyncio.run(group_members(gen))  # issue 14: no second local vector folder
    if members is None:
        log.warning("consumer group %s could not be described; starting without the "
                    "split-vector-store check", gen.worker_id)
    refusal = split_store_reason(gen, members)
    if refusal:
        raise SystemExit(refusal)
    from breadcrumb.infra.preflight import explained

    with explained(gen):
        parts = build_worker_parts(gen)
    parts.generation, parts.catalog = name, catalog
    app = create_app(gen, parts, client_id=store_client_id(gen))
    if serve_api:
        attach_api(app, settings, parts)
    worker = faust.Worker(app, loglevel=loglevel)
    try:
        worker.execute_from_commandline()
    finally:
        parts.close()


def attach_api(app: Any, settings: Settings, parts: Any) -> None:
    """Serve the HTTP query service as a task of the Faust app (signals stay Faust's)."""
    import uvicorn

    from breadcrumb.clients.service import write_server_marker
    from breadcrumb.infra.bootstrap import observer_stats
    from breadcrumb.infra.cluster import build_cluster_runtime, cluster_generations
    from breadcrumb.query_api.app import create_app as create_http_app
    from breadcrumb.query_api.app import settle_heap
    from breadcrumb.query_api.telemetry import uvicorn_log_config

    runtime = build_cluster_runtime(settings, parts.embedder, index=parts.index)
    gens = cluster_generations(runtime)
    gens.local_parts = parts  # a replay here quiets this worker
    base_stats = runtime.extra_stats  # this process runs the observer: report it too
    runtime.extra_stats = lambda: {**base_stats(), **observer_stats(parts.observer)}
    http = create_http_app(runtime, manage_lifecycle=False)

    class _InLoopServer(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:  # Faust owns the signals here
            yield

    server = _InLoopServer(uvicorn.Config(http, host=settings.host, port=settings.port,
                                          log_level="info", lifespan="off",
                                          log_config=uvicorn_log_config(settings),
                                          timeout_graceful_shutdown=5))

    @app.task
    async def serve_http() -> None:
        await asyncio.get_running_loop().run_in_executor(None, runtime.start)
        settle_heap()
        marker = write_server_marker(settings)  # CLI commands on this data dir find us
        try:
            await server.serve()
        finally:
            marker.unlink(missing_ok=True)
            await gens.aclose()
            runtime.stop()

"""Cluster start-up that explains itself: each service a process needs is reached once
before anything is built, and a failure is ONE line naming the setting to fix.

``breadcrumb serve`` (cluster mode) and ``breadcrumb worker`` call :func:`cluster_preflight`;
:func:`explained` turns the errors a build can still raise after it (a local-mode Qdrant
folder another process holds) into the same kind of line. Both raise
:class:`~breadcrumb.stores.data_dir.StartupError`, which the CLI prints as one line.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from breadcrumb.settings import Settings
from breadcrumb.stores.data_dir import StartupError

TIMEOUT = 5.0  # seconds for one reachability check
LOCAL_FOLDER_TAKEN = "already accessed by another instance"


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:240]


def _tcp(host: str, port: int) -> None:
    with socket.create_connection((host, port), timeout=TIMEOUT):
        pass


def _host_port(address: str, default_port: int) -> tuple[str, int]:
    parts = urlsplit(address if "://" in address else f"//{address}")
    return parts.hostname or address, parts.port or default_port


def check_kafka(settings: Settings) -> None:
    """Every bootstrap address answers a TCP connection."""
    for address in filter(None, (a.strip() for a in settings.kafka_bootstrap.split(","))):
        host, port = _host_port(address, 9092)
        try:
            _tcp(host, port)
        except OSError as exc:
            raise StartupError(f"cannot reach Kafka at {address} (BREADCRUMB_KAFKA_BOOTSTRAP): "
                               f"{_reason(exc)}") from None


def check_mysql(settings: Settings) -> None:
    """A connection to the configured database, with the configured user."""
    import pymysql

    from breadcrumb.stores.sql.mysql.store import mysql_store

    kwargs = {**mysql_store(settings).db.connect_kwargs(), "connect_timeout": TIMEOUT}
    try:
        pymysql.connect(**kwargs).close()
    except pymysql.err.MySQLError as exc:
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
        where = f"{settings.mysql_host}:{settings.mysql_port}"
        if code == 1045:
            setting = "BREADCRUMB_MYSQL_USER / BREADCRUMB_MYSQL_PASSWORD"
        elif code in (1044, 1049):
            setting = "BREADCRUMB_MYSQL_DATABASE"
        elif code in (2026,) or settings.mysql_ssl_ca:
            setting = "BREADCRUMB_MYSQL_SSL_CA"
        else:
            setting = "BREADCRUMB_MYSQL_HOST / BREADCRUMB_MYSQL_PORT"
        raise StartupError(f"cannot open MySQL/TiDB database {settings.mysql_database!r} at "
                           f"{where} ({setting}): {_reason(exc)}") from None


def check_qdrant(settings: Settings) -> None:
    """The Qdrant server at ``qdrant_url`` answers (and accepts the key)."""
    if not settings.qdrant_url:
        return
    import httpx

    headers = {"api-key": settings.qdrant_api_key.get_secret_value()} \
        if settings.qdrant_api_key else {}
    try:
        answer = httpx.get(settings.qdrant_url.rstrip("/") + "/collections", headers=headers,
                           timeout=TIMEOUT)
    except httpx.HTTPError as exc:
        raise StartupError(f"cannot reach the Qdrant server at {settings.qdrant_url} "
                           f"(BREADCRUMB_QDRANT_URL; unset it to keep vectors on the "
                           f"vectors topic): {_reason(exc)}") from None
    if answer.status_code in (401, 403):
        raise StartupError(f"the Qdrant server at {settings.qdrant_url} refused the key "
                           f"(BREADCRUMB_QDRANT_API_KEY): HTTP {answer.status_code}")
    if answer.status_code >= 400:
        raise StartupError(f"{settings.qdrant_url} does not answer as a Qdrant server "
                           f"(BREADCRUMB_QDRANT_URL): HTTP {answer.status_code}")


def check_s3(settings: Settings) -> None:
    """The S3 endpoint (when one is configured) accepts a TCP connection."""
    if not settings.s3_endpoint:
        return
    host, port = _host_port(settings.s3_endpoint,
                            443 if settings.s3_endpoint.startswith("https") else 80)
    try:
        _tcp(host, port)
    except OSError as exc:
        raise StartupError(f"cannot reach the S3 endpoint {settings.s3_endpoint} "
                           f"(BREADCRUMB_S3_ENDPOINT): {_reason(exc)}") from None


def cluster_preflight(settings: Settings) -> None:
    """Reach Kafka, MySQL/TiDB, Qdrant (a server URL) and S3 once; one line on failure."""
    for check in (check_kafka, check_mysql, check_qdrant, check_s3):
        check(settings)


def local_folder_line(settings: Settings) -> str:
    return (f"the vector store {settings.data_dir / 'qdrant'} (qdrant-client local mode: no "
            "BREADCRUMB_QDRANT_URL) is held by another process on this data dir (another "
            "serve, or a worker with BREADCRUMB_VECTOR_STORE=qdrant): give this process its "
            "own BREADCRUMB_DATA_DIR, set BREADCRUMB_QDRANT_URL, or leave "
            "BREADCRUMB_VECTOR_STORE unset on workers (they send vectors to the topic)")


def explain(settings: Settings, exc: BaseException) -> str | None:
    """One line for a start-up error a setting explains, else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if LOCAL_FOLDER_TAKEN in str(current):
            return local_folder_line(settings)
        current = current.__cause__ or current.__context__
    return None


@contextmanager
def explained(settings: Settings) -> Iterator[None]:
    """Re-raise a start-up error a setting explains as a one-line :class:`StartupError`."""
    try:
        yield
    except StartupError:
        raise
    except Exception as exc:
        line = explain(settings, exc)
        if line is None:
            raise
        raise StartupError(line) from None


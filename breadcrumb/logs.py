"""Logging for every command: text or one JSON object per line (``settings.log_format``).

Kept apart from the service's telemetry so a core install (no Prometheus, no uvicorn)
can log too.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from breadcrumb.settings import Settings

# ---------------------------------------------------------------------- logging
# LogRecord's own attributes, plus uvicorn's ANSI-coloured duplicate of the message
_STANDARD_ATTRS = frozenset(logging.makeLogRecord({}).__dict__) | {
    "message", "asctime", "color_message"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, message, exception, ``extra=`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                payload[key] = value
        return orjson.dumps(payload, default=str).decode()


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


#: client libraries that log every request at INFO (``HTTP Request: GET /v1/stats …``)
CHATTY_LIBRARIES = ("httpx", "httpcore", "aiokafka", "urllib3")
#: kept at their own level under a quiet parent: rebalances and partition assignments are
#: rare and an operator (and the fault suite) reads them in a worker's log
KEPT_LOGGERS = ("aiokafka.consumer.group_coordinator",)
LEVELS = ("debug", "info", "warning", "error")
#: polled by probes, dashboards and the CLI's progress: no access line when they succeed
POLLED_PATHS = frozenset({"/healthz", "/readyz", "/v1/stats", "/v1/identity", "/metrics",
                          "/v1/dashboard/snapshot"})


def configure_logging(settings: Settings, verbose: bool = False, level: str | None = None,
                      quiet_libraries: bool | None = None) -> None:
    """Root logging as ``settings.log_format`` says (``text`` or ``json``); replaces handlers.

    ``level`` (``--log-level``) sets the root level; ``verbose`` (``-v``) means ``debug``.
    The client libraries' per-request lines are off unless ``quiet_libraries`` is False
    (default: off unless ``verbose`` or ``level`` is given); below ``debug`` the access log
    skips successful polling (:data:`POLLED_PATHS`).
    """
    handler = logging.StreamHandler()
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    chosen = "debug" if verbose else (level or "info")
    logging.basicConfig(level=chosen.upper(), handlers=[handler], force=True)
    quiet = (not verbose and level is None) if quiet_libraries is None else quiet_libraries
    for name in CHATTY_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING if quiet else logging.NOTSET)
    for name in KEPT_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO if quiet else logging.NOTSET)
    access = logging.getLogger("uvicorn.access")
    for old in [f for f in access.filters if isinstance(f, PollingFilter)]:
        access.removeFilter(old)
    if chosen != "debug":
        access.addFilter(PollingFilter())


class PollingFilter(logging.Filter):
    """Drops uvicorn access lines of successful polling (health, stats, identity)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if not isinstance(args, tuple) or len(args) < 5:
            return True
        path, status = str(args[2]).partition("?")[0], args[4]
        polled = path in POLLED_PATHS or (path.startswith("/v1/threads/")  # an import's wait
                                          and path.endswith("/pending"))
        return not (polled and isinstance(status, int) and status < 400)


def uvicorn_log_config(settings: Settings, quiet_polling: bool = True) -> dict[str, Any] | None:
    """``log_config`` for ``uvicorn.run``: ``None`` in json mode so uvicorn logs go to root
    (whose ``uvicorn.access`` logger :func:`configure_logging` filtered); in text mode
    uvicorn's own config, its access log without successful polling."""
    if settings.log_format == "json":
        return None
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    if quiet_polling:
        config.setdefault("filters", {})["polling"] = {"()": PollingFilter}
        config["handlers"]["access"]["filters"] = ["polling"]
    return config

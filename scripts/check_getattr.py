"""Finds ``getattr`` / ``hasattr`` capability probes in product code (``make lint``).

A store that callers must probe with ``getattr(store, "method", None)`` has a capability
its port does not name: name it as a ``runtime_checkable`` Protocol in ``stores/ports.py``
and check it with ``isinstance``. Every remaining ``getattr`` / ``hasattr`` in product code
is listed in :data:`ALLOWED` with the reason it is not such a probe; a new one fails the
check with its file, line and the attribute it reads.

Usage: ``python scripts/check_getattr.py`` (from the repository root); exit 1 on a finding.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The product packages (the ``breadcrumb`` package's own modules and its sub-packages).
PRODUCT = ("breadcrumb", "infra", "processors", "query_api", "stores", "streams", "topics")
DYNAMIC = "<dynamic>"  # getattr with a computed name

#: (file, attribute) -> why this getattr / hasattr is not a store capability probe.
ALLOWED: dict[tuple[str, str], str] = {
    # attributes of exceptions raised by drivers and libraries (no common base class)
    ("streams/failure_policy.py", "status_code"): "an HTTP error's status, any client library",
    ("stores/llm/chat.py", "status_code"): "an HTTP error's status, any client library",
    ("stores/sql/sqlite/database.py", "sqlite_errorcode"): "sqlite3 errors carry it from 3.11 only",
    ("breadcrumb/extras.py", "name"): "ModuleNotFoundError.name, may be None",
    ("breadcrumb/clients/publishers.py", "retriable"): "aiokafka errors: a class attribute on some",
    # records and rows read field by field (the name is data)
    ("topics/records.py", DYNAMIC): "a dataclass's fields by name (to_dict)",
    ("stores/vectors/qdrant_common.py", DYNAMIC): "an Observation's payload fields by name",
    ("stores/sql/schema.py", DYNAMIC): "a Chunk's columns by name",
    ("streams/lifecycle/service.py", DYNAMIC): "a status change's fields by name (audit rows)",
    # per-thread state of a threading.local (unset in a thread that never set it)
    ("streams/lifecycle/batch.py", "payloads"): "threading.local: this thread's deferred payloads",
    ("streams/lifecycle/batch.py", "reads"): "threading.local: this thread's batch reads",
    ("streams/lifecycle/batch.py", "tables"): "threading.local: this thread's batch tables",
    # framework and library objects
    ("query_api/auth.py", "principal"): "Starlette request.state, set by the auth middleware",
    ("query_api/input_guard.py", "json_body"): "Starlette request.state, set by the guard",
    ("query_api/telemetry.py", "telemetry"): "Starlette app.state, set once per app",
    ("query_api/routes/health.py", "readiness"): "Starlette app.state, set once per app",
    ("query_api/routes/admin.py", "replay_job"): "Starlette app.state, set by the first replay",
    ("streams/kafka/replay.py", "crash_reason"): "Faust App: public in newer versions",
    ("streams/kafka/replay.py", "_crash_reason"): "Faust App: private in older versions",
    ("infra/cluster_stores.py", "groups"): "aiokafka admin response objects differ by version",
    ("stores/vectors/server/index.py", "_client"): "qdrant-client local mode internals (WAL)",
    ("stores/vectors/server/index.py", "collections"): "qdrant-client local mode internals",
    ("stores/vectors/server/index.py", "storage"): "qdrant-client local mode internals",
    ("stores/vectors/server/index.py", "_bc_wal"): "our marker on a local collection",
    ("stores/vectors/edge/index_build.py", "nice"): "os.nice: POSIX only",
    ("stores/vectors/edge/index_build.py", "sched_getaffinity"): "os.sched_getaffinity: Linux only",
    ("stores/vectors/sink/topic.py", "prefix"): "an index's collection prefix (topic index: none)",
    # command-line arguments and settings-like objects
    ("breadcrumb/cli.py", "data_dir"): "argparse: sub-commands define different options",
    ("breadcrumb/cli.py", "host"): "argparse: sub-commands define different options",
    ("breadcrumb/cli.py", "port"): "argparse: sub-commands define different options",
    ("breadcrumb/cli.py", "mode"): "argparse: sub-commands define different options",
    ("breadcrumb/cli.py", "embedder"): "argparse: sub-commands define different options",
    ("breadcrumb/cli.py", "ssl_certfile"): "argparse: sub-commands define different options",
    ("breadcrumb/cli.py", "ssl_keyfile"): "argparse: sub-commands define different options",
    ("breadcrumb/cli.py", "api_key"): "argparse: sub-commands define different options",
    ("breadcrumb/cli.py", "url"): "argparse: sub-commands define different options",
    ("breadcrumb/cli.py", DYNAMIC): "argparse: the settings overrides a sub-command has",
    ("breadcrumb/commands/import_.py", "isatty"): "a progress stream: any file-like object",
    ("breadcrumb/commands/eval.py", DYNAMIC): "argparse: one threshold flag per metric",
    ("breadcrumb/commands/__init__.py", "register"): "a command module's optional hook",
    ("breadcrumb/clients/service.py", "ssl_certfile"):
        "client settings without the server's fields",
    ("topics/kafka_security.py", "kafka_security_protocol"): "settings-like objects of tools",
    ("query_api/routes/dashboard.py", "dashboard_interval_seconds"): "settings of old tests",
}


def product_files(root: Path = ROOT) -> list[Path]:
    """Every product module once: the top-level packages and the ``breadcrumb`` package's
    own files (its sub-packages are links to the top-level ones)."""
    out: list[Path] = []
    for name in PRODUCT:
        folder = root / name
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(root)
            if name == "breadcrumb" and rel.parts[1] in PRODUCT:
                continue  # breadcrumb/stores -> ../stores: seen under its own name
            out.append(path)
    return out


def probes(path: Path) -> list[tuple[int, str, str]]:
    """``(line, function, attribute)`` of each getattr / hasattr call in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2):
            name = node.args[1]
            attr = name.value if isinstance(name, ast.Constant) and isinstance(
                name.value, str) else DYNAMIC
            found.append((node.lineno, node.func.id, attr))
    return found


def findings(root: Path = ROOT) -> list[str]:
    out = []
    for path in product_files(root):
        rel = path.relative_to(root).as_posix()
        for line, fn, attr in probes(path):
            if (rel, attr) not in ALLOWED:
                out.append(f"{rel}:{line}: {fn}(..., {attr!r}): a capability probe? name it "
                           "as a Protocol in stores/ports.py and use isinstance, or add it "
                           "to ALLOWED in scripts/check_getattr.py with the reason")
    return out


def report(found: list[str]) -> int:
    """Print each finding; the exit status (1 on a finding)."""
    for line in found:
        print(line)  # noqa: T201 - a lint tool's report
    return 1 if found else 0


def main() -> int:
    return report(findings())


if __name__ == "__main__":
    sys.exit(main())

"""Finds product classes with more than 15 methods that do not say why (``make lint``).

A class past :data:`LIMIT` methods is often two things in one (issue 25, "the house"). One
may keep its size when its docstring gives the reason: a paragraph that starts with the
marker ``Why so many methods:`` followed by the reason in a few words, e.g.::

    class SqlStore:
        \"\"\"RawEventStore + MemoryStore + ... over one SQL database.

        Why so many methods: it implements four ports on one connection and one lock.
        \"\"\"

Methods counted: every ``def`` / ``async def`` directly in the class body (``__init__``,
other dunders, properties and private helpers included; a nested class counts on its own).
The product files are those ``scripts/check_getattr.py`` reads.

Usage: ``python scripts/check_classes.py`` (from the repository root); exit 1 on a finding.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_getattr import ROOT, product_files, report  # noqa: E402 - the sibling's list

LIMIT = 15  # more methods than this need the reason
MARKER = "Why so many methods:"
MIN_WORDS = 4  # a reason, not a placeholder


def method_count(cls: ast.ClassDef) -> int:
    """``def`` / ``async def`` statements directly in the class body."""
    return sum(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in cls.body)


def gives_reason(docstring: str | None) -> bool:
    """True when a paragraph of ``docstring`` starts with :data:`MARKER` and goes on with
    at least :data:`MIN_WORDS` words."""
    for paragraph in (docstring or "").split("\n\n"):
        text = " ".join(paragraph.split())
        if text.startswith(MARKER) and len(text[len(MARKER):].split()) >= MIN_WORDS:
            return True
    return False


def large_classes(path: Path) -> list[tuple[int, str, int, bool]]:
    """``(line, name, methods, gives a reason)`` of each class over :data:`LIMIT` methods."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [(node.lineno, node.name, method_count(node), gives_reason(ast.get_docstring(node)))
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and method_count(node) > LIMIT]


def findings(root: Path = ROOT) -> list[str]:
    out = []
    for path in product_files(root):
        rel = path.relative_to(root).as_posix()
        for line, name, n, reason in large_classes(path):
            if not reason:
                out.append(f"{rel}:{line}: class {name} has {n} methods (over {LIMIT}): split "
                           f"it, or say why in its docstring with a paragraph starting "
                           f"{MARKER!r}")
    return out


def main() -> int:
    return report(findings())


if __name__ == "__main__":
    sys.exit(main())

"""Finds product classes with more than 15 methods that do not say why (``make lint``).

A class past :data:`LIMIT` methods is often two things in one (issue 25, "the house"). One
may keep its size when its docstring gives the reason: a paragraph that starts with the
marker ``Why so many methods:`` followed by the reason in a few words, e.g.::

    class SqlStore:
        \"\"\"RawEventStore + MemoryStore + ... over one SQL database.

        Why so many methods: it implements four ports on one connection and one lock.
        \"\"\"

Methods counted: every ``def`` / ``async def`` the class reaches over its MRO: those in its
body and in the bodies of the product classes it inherits from (``__init__``, other
dunders, properties and private helpers included; a name defined at two levels counts
once; a base outside the product adds nothing; a nested class counts on its own). A
mixin tower is as large as what it adds up to (``scripts/class_index.py``). The product
files are those ``scripts/check_getattr.py`` reads.

Usage: ``python scripts/check_classes.py`` (from the repository root); exit 1 on a finding.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_getattr import ROOT, product_files, report  # noqa: E402 - the sibling's list
from class_index import ClassIndex  # noqa: E402 - the sibling's class index

LIMIT = 15  # more methods than this need the reason
MARKER = "Why so many methods:"
MIN_WORDS = 4  # a reason, not a placeholder


def own_method_count(cls: ast.ClassDef) -> int:
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


def large_classes(index: ClassIndex, path: Path) -> list[tuple[int, str, int, bool]]:
    """``(line, name, methods over the MRO, gives a reason)`` of each class of ``path`` over
    :data:`LIMIT` methods."""
    out = []
    for info in index.classes.values():
        if info.path != path:
            continue
        n = len(index.reachable(info.key))
        if n > LIMIT:
            out.append((info.node.lineno, info.name, n, gives_reason(ast.get_docstring(info.node))))
    return sorted(out)


def findings(root: Path = ROOT) -> list[str]:
    files = product_files(root)
    index = ClassIndex(root, files)
    out = []
    for path in files:
        rel = path.relative_to(root).as_posix()
        for line, name, n, reason in large_classes(index, path):
            if not reason:
                out.append(f"{rel}:{line}: class {name} has {n} methods (over {LIMIT}): split "
                           f"it, or say why in its docstring with a paragraph starting "
                           f"{MARKER!r}")
    return out


def main() -> int:
    return report(findings())


if __name__ == "__main__":
    sys.exit(main())

"""The product's classes and the methods each reaches through its bases (``make lint``).

Read from the source (no import): every class of the product files
(``check_getattr.product_files``) with the ``def`` / ``async def`` statements of its body, and
its bases resolved through the module's own classes and its ``from ... import ...`` /
``import ... as ...`` lines. A base outside the product (``ABC``, ``Protocol``,
``Exception``, a library class) adds nothing. What a class *reaches* is the union of the
method names of the class and of every product class it inherits from, which is what its
MRO offers (a name defined twice counts once).

Used by ``scripts/check_classes.py`` (a class over 15 methods says why) and
``scripts/check_store_contract.py`` (the largest store class).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "breadcrumb"


@dataclass
class ClassInfo:
    """One class of the product: where it is, its own methods and its resolved bases."""

    module: str
    path: Path
    node: ast.ClassDef
    methods: list[str]
    bases: list[tuple[str, str]] = field(default_factory=list)  # (module, class) in product

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def key(self) -> tuple[str, str]:
        return (self.module, self.node.name)


def module_name(root: Path, path: Path) -> str:
    """``stores/sql/core.py`` -> ``breadcrumb.stores.sql.core`` (``breadcrumb/cli.py`` ->
    ``breadcrumb.cli``; a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts and parts[0] == PACKAGE:
        parts.pop(0)
    return ".".join([PACKAGE, *parts])


def own_methods(cls: ast.ClassDef) -> list[str]:
    """Names of the ``def`` / ``async def`` statements directly in the class body."""
    return [n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _absolute(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The module a ``from`` import names (relative imports resolved against ``module``)."""
    if not level:
        return target or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join([*base, *([target] if target else [])])


def _imports(module: str, path: Path, tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Local name -> (module, name) of each imported name; (module, "") for a module."""
    out: dict[str, tuple[str, str]] = {}
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(module, is_package, node.level, node.module)
            for alias in node.names:
                out[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = (alias.name, "")
    return out


class ClassIndex:
    """Every product class, by (module, name), with its bases resolved."""

    def __init__(self, root: Path, files: list[Path]) -> None:
        self.root = root
        self.classes: dict[tuple[str, str], ClassInfo] = {}
        trees: list[tuple[str, Path, ast.Module]] = []
        for path in files:
            module = module_name(root, path)
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            trees.append((module, path, tree))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    info = ClassInfo(module, path, node, own_methods(node))
                    self.classes.setdefault(info.key, info)
        for module, path, tree in trees:
            imports = _imports(module, path, tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and (module, node.name) in self.classes:
                    info = self.classes[(module, node.name)]
                    if info.node is node:
                        info.bases = [b for e in node.bases
                                      if (b := self._resolve(module, imports, e)) is not None]

    def _resolve(self, module: str, imports: dict[str, tuple[str, str]],
                 expr: ast.expr) -> tuple[str, str] | None:
        """The product class a base expression names, or None."""
        if isinstance(expr, ast.Subscript):  # Generic[T], Protocol[T]
            return self._resolve(module, imports, expr.value)
        if isinstance(expr, ast.Name):
            if (module, expr.id) in self.classes:
                return (module, expr.id)
            source, name = imports.get(expr.id, ("", ""))
            return (source, name) if (source, name) in self.classes else None
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            source, name = imports.get(expr.value.id, ("", ""))
            target = (f"{source}.{name}" if name else source, expr.attr)
            return target if target in self.classes else None
        return None

    def ancestors(self, key: tuple[str, str]) -> list[ClassInfo]:
        """The class and every product class it inherits from (each once, MRO-like)."""
        seen: dict[tuple[str, str], ClassInfo] = {}
        todo = [key]
        while todo:
            current = todo.pop(0)
            if current in seen or current not in self.classes:
                continue
            info = seen[current] = self.classes[current]
            todo.extend(info.bases)
        return list(seen.values())

    def reachable(self, key: tuple[str, str]) -> set[str]:
        """The method names a class offers through its MRO (its own and its bases')."""
        return {name for info in self.ancestors(key) for name in info.methods}


def is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")

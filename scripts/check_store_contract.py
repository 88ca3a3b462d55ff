"""Counts the storage contract from the tree (issue 48, ``make lint``).

Each figure says how far callers can see which store methods they may use:

``private_calls``
    calls of another object's private method: ``x._name(...)`` where ``x`` is not ``self``,
    ``cls`` or ``super()`` (``store._execute``, ``self.store._read``, ``self._lock._is_owned``).
    A module's private function (``schema._t``, ``os._exit``) is not an object's method.
``any_store_params``
    parameters named ``store``, ``sql``, ``hot``, ``tables``, ``raw``, ``states`` (or
    ``*_store``) typed ``Any`` or not typed: a store a reader cannot look up. Parameters
    of these names that hold no store are listed in :data:`NOT_STORES` with what they hold.
``getattr_forwarders``
    classes defining ``__getattr__``: a wrapper passing the rest of an object through
    unseen (wrap by implementing the same Protocol instead).
``largest_store_class``
    the methods (not dunders) a store class reaches over its MRO, of the largest one: the
    classes under ``stores/`` but the indexes, models and LLM clients
    (:data:`OTHER_ROOMS`, printed apart) and the Protocols.
``runtime_store_uses``
    ``runtime.store`` read or assigned (``runtime``, ``self.runtime``, ``x.runtime``):
    product code reaches the stores through the ports ``Runtime`` names.

A figure over its target in :data:`TARGETS` fails the check (with ``--list``, where).
Usage: ``python scripts/check_store_contract.py [--list]`` (from the repository root).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_getattr import ROOT, product_files  # noqa: E402 - the sibling's list
from class_index import ClassIndex, ClassInfo, is_dunder, module_name  # noqa: E402

#: What the tree may hold at most (issue 48's goals; each figure was measured at 43b5902:
#: 92, 68, 4, 101 and 21).
TARGETS: dict[str, int] = {
    "private_calls": 0,
    "any_store_params": 0,
    "getattr_forwarders": 0,
    "largest_store_class": 25,
    "runtime_store_uses": 0,
}
STORE_NAMES = frozenset({"store", "sql", "hot", "tables", "raw", "states"})
#: (file, function, parameter) -> what the parameter holds: no store.
NOT_STORES: dict[tuple[str, str, str], str] = {
    ("breadcrumb/importers/openai_chat.py", "_loads", "raw"): "a JSON text or value",
    ("breadcrumb/importers/toolcalls.py", "call_draft", "raw"): "a tool call as exported",
}
#: Rooms of ``stores/`` that hold no store (indexes, models, LLM clients): their largest
#: class is printed, not held to the target.
OTHER_ROOMS = ("stores/vectors/", "stores/embedders/", "stores/llm/")
Finding = tuple[str, int, str]  # (file, line, what)


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _module_names(tree: ast.Module, modules: set[str]) -> set[str]:
    """Local names bound to modules: ``import x [as y]`` and ``from p import m`` when
    ``p.m`` is a product module."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.update(a.asname or a.name for a in node.names
                       if f"{node.module}.{a.name}" in modules)
    return out


def _own(receiver: ast.expr, modules: set[str]) -> bool:
    """``self`` / ``cls`` / ``super()`` / a module: not another object."""
    if isinstance(receiver, ast.Name):
        return receiver.id in ("self", "cls") or receiver.id in modules
    return (isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name)
            and receiver.func.id == "super")


def private_calls(rel: str, tree: ast.Module, modules: set[str]) -> Iterator[Finding]:
    local = _module_names(tree, modules)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr.startswith("_") and not is_dunder(node.func.attr)
                and not _own(node.func.value, local)):
            yield rel, node.lineno, ast.unparse(node.func)


def _is_any(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return True
    text = ast.unparse(annotation).replace(" ", "")
    return text in ("Any", "Any|None", "None|Any", "Optional[Any]", "'Any'", '"Any"')


def any_store_params(rel: str, tree: ast.Module) -> Iterator[Finding]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = node.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            named = arg.arg in STORE_NAMES or arg.arg.endswith("_store")
            if named and _is_any(arg.annotation) and (rel, node.name, arg.arg) not in NOT_STORES:
                yield rel, node.lineno, f"{node.name}({arg.arg}: Any)"


def getattr_forwarders(rel: str, tree: ast.Module) -> Iterator[Finding]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and "__getattr__" in (
                n.name for n in node.body if isinstance(n, ast.FunctionDef)):
            yield rel, node.lineno, f"class {node.name}.__getattr__"


def runtime_store_uses(rel: str, tree: ast.Module) -> Iterator[Finding]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "store":
            owner = node.value
            if (isinstance(owner, ast.Name) and owner.id == "runtime") or (
                    isinstance(owner, ast.Attribute) and owner.attr == "runtime"):
                yield rel, node.lineno, ast.unparse(node)


def _is_protocol(info: ClassInfo) -> bool:
    return any(ast.unparse(b).split("[")[0].split(".")[-1] == "Protocol"
               for b in info.node.bases)


def store_classes(index: ClassIndex, root: Path, rooms: tuple[str, ...] | None = None
                  ) -> list[tuple[int, int, ClassInfo]]:
    """(methods, public methods, class) over the MRO of the store classes, largest first;
    ``rooms``: those of these rooms instead (:data:`OTHER_ROOMS`)."""
    out = []
    for info in index.classes.values():
        rel = _rel(root, info.path)
        if not rel.startswith("stores/") or _is_protocol(info):
            continue
        if rel.startswith(OTHER_ROOMS) != (rooms is not None):
            continue
        names = {n for n in index.reachable(info.key) if not is_dunder(n)}
        out.append((len(names), sum(not n.startswith("_") for n in names), info))
    out.sort(key=lambda t: (-t[0], -t[1], t[2].module, t[2].name))
    return out


def measure(root: Path = ROOT) -> tuple[dict[str, list[Finding]], list[str]]:
    """Each figure's findings, and the lines describing the largest classes."""
    files = product_files(root)
    modules = {module_name(root, p) for p in files}
    found: dict[str, list[Finding]] = {name: [] for name in TARGETS}
    for path in files:
        rel = _rel(root, path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found["private_calls"] += private_calls(rel, tree, modules)
        found["any_store_params"] += any_store_params(rel, tree)
        found["getattr_forwarders"] += getattr_forwarders(rel, tree)
        found["runtime_store_uses"] += runtime_store_uses(rel, tree)
    index = ClassIndex(root, files)
    notes = []
    for label, rooms in (("largest store class", None), ("(not held to it) largest index, "
                                                          "model or LLM class", OTHER_ROOMS)):
        ranked = store_classes(index, root, rooms)
        if ranked:
            n, public, info = ranked[0]
            notes.append(f"{label}: {info.name} ({_rel(root, info.path)}), {n} methods "
                         f"over its MRO, {public} public")
            if rooms is None:
                found["largest_store_class"] = [(_rel(root, info.path), info.node.lineno,
                                                 f"class {info.name}")] * n
    return found, notes


def main(argv: list[str]) -> int:
    found, notes = measure()
    failed = False
    for name, target in TARGETS.items():
        figure = len(found[name])
        over = figure > target
        failed |= over
        verdict = "OVER TARGET" if over else "ok"
        print(f"{name:22} {figure:4}  target {target:4}  {verdict}")  # noqa: T201 - report
        if "--list" in argv or over:
            for rel, line, what in dict.fromkeys(found[name]):
                print(f"    {rel}:{line}: {what}")  # noqa: T201 - a lint tool's report
    for note in notes:
        print(note)  # noqa: T201 - a lint tool's report
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""``make lint``'s own checks (scripts/): no getattr capability probe, and a class over 15
methods says why in its docstring. Each runs on the real tree (clean) and on a small tree
written here (the finding it must report)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _script(name: str) -> ModuleType:
    sys.path.insert(0, str(SCRIPTS))
    try:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SCRIPTS))


def _tree(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / "stores").mkdir()
    (tmp_path / "stores" / name).write_text(text, encoding="utf-8")
    return tmp_path


def _class(methods: int, doc: str) -> str:
    body = "".join(f"    def m{i}(self) -> None: ...\n" for i in range(methods))
    return f'class Big:\n    """{doc}"""\n\n{body}'


def test_the_product_tree_is_clean() -> None:
    assert _script("check_getattr").findings() == []
    assert _script("check_classes").findings() == []


def test_a_probe_is_reported_with_file_line_and_attribute(tmp_path: Path) -> None:
    root = _tree(tmp_path, "x.py", "def f(s):\n    return getattr(s, 'paused', None)\n")
    [found] = _script("check_getattr").findings(root)
    assert found.startswith("stores/x.py:2: getattr(..., 'paused')")


def test_a_big_class_needs_the_reason(tmp_path: Path) -> None:
    checks = _script("check_classes")
    root = _tree(tmp_path, "big.py", _class(16, "Big."))
    [found] = checks.findings(root)
    assert found.startswith("stores/big.py:1: class Big has 16 methods (over 15)")
    for doc, n, clean in [
        ("Big.\n\n    Why so many methods: it implements four ports on one lock.\n    ", 16, True),
        ("Big.\n\n    Why so many methods: because.\n    ", 16, False),  # no reason given
        ("Big. Why so many methods: it implements four ports here.", 16, False),  # mid-text
        ("Big.", 15, True),  # at the limit
    ]:
        (root / "stores" / "big.py").write_text(_class(n, doc), encoding="utf-8")
        assert (checks.findings(root) == []) is clean, doc

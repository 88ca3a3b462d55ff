"""One tree, read once (issue 25): ruff and mypy see every product module exactly once,
and a checkout without its links refuses to build, in one line."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINKED = ("infra", "processors", "query_api", "stores", "streams", "topics")


def _package_files() -> set[Path]:
    """Every module of the ``breadcrumb`` package, as the wheel holds it (links followed)."""
    found = {Path(os.path.realpath(p)) for p in (ROOT / "breadcrumb").rglob("*.py")}
    for name in LINKED:  # rglob does not follow linked folders
        found |= {p.resolve() for p in (ROOT / name).rglob("*.py")}
    return found


def _product(paths: list[Path]) -> list[Path]:
    """The product modules among ``paths`` (real paths, duplicates kept)."""
    product = _package_files()
    return [p for p in (Path(os.path.realpath(ROOT / q)) for q in paths) if p in product]


def test_ruff_lints_every_product_file_once() -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or "ruff"
    listed = subprocess.run([ruff, "check", "--show-files", "."], cwd=ROOT, text=True,
                            capture_output=True, check=True).stdout.split()
    seen = _product([Path(line) for line in listed if line.endswith(".py")])
    assert len(seen) == len(set(seen)), "a product file is linted twice"
    assert set(seen) == _package_files()


@pytest.mark.parametrize("args", [[], ["."]], ids=["mypy", "mypy ."])
def test_mypy_checks_every_product_file_once(args: list[str]) -> None:
    from mypy.main import process_options

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        sources, _options = process_options(["--config-file", "pyproject.toml", *args],
                                            stdout=io.StringIO(), stderr=io.StringIO())
    finally:
        os.chdir(cwd)
    seen = _product([Path(s.path) for s in sources if s.path])
    assert len(seen) == len(set(seen)), "a product file is checked twice"
    assert set(seen) == _package_files()
    modules = [s.module for s in sources if s.path and Path(
        os.path.realpath(ROOT / s.path)) in _package_files()]
    assert all(m == "breadcrumb" or m.startswith("breadcrumb.") for m in modules), modules


def test_a_checkout_without_its_links_refuses_to_build(tmp_path: Path) -> None:
    """What ``git clone -c core.symlinks=false`` leaves: a text file per link."""
    shutil.copy(ROOT / "setup.py", tmp_path / "setup.py")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    package = tmp_path / "breadcrumb"
    package.mkdir()
    shutil.copy(ROOT / "breadcrumb" / "__init__.py", package / "__init__.py")
    for name in LINKED:
        (package / name).write_text(f"../{name}")
    done = subprocess.run([sys.executable, "setup.py", "bdist_wheel"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "git clone -c core.symlinks=true" in lines[0] and "breadcrumb/infra" in lines[0]


def test_the_links_of_this_checkout_are_materialized() -> None:
    """setup.py's condition holds here (else the build above refuses this checkout)."""
    for name in LINKED:
        assert (ROOT / "breadcrumb" / name).resolve() == (ROOT / name).resolve()
        assert (ROOT / "breadcrumb" / name / "__init__.py").is_file()


@pytest.mark.parametrize("name", LINKED)
def test_a_folder_imported_by_its_bare_name_says_which_name_to_use(name: str) -> None:
    """From the repository root ``stores.ports.Hit is breadcrumb.stores.ports.Hit`` was
    False (two copies of every module): the bare name now refuses, naming the right one."""
    done = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert f"ImportError: import breadcrumb.{name}, not {name}" in done.stderr
    ok = subprocess.run([sys.executable, "-c", f"import breadcrumb.{name}"], cwd=ROOT,
                        capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr

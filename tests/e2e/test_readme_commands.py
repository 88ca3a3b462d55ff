"""The README's two commands on a Python that refuses installs outside a virtualenv (PEP 668).

A scratch interpreter carries an ``EXTERNALLY-MANAGED`` marker (tests/support); a copy of
the working tree (tracked and new files, as a fresh clone would have them) runs
``make demo`` and the install half of ``make test`` with ``PYTHON=`` that interpreter.
``make test`` itself starts the shared services, so its service half is checked with
``make -n``: it must drive infra/services.sh and pytest with the project venv's Python.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.scratch_python import scratch_python

ROOT = Path(__file__).resolve().parents[2]


def _uv() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if found is None:
        pytest.fail("uv is not installed (it comes with the [test] extra)")
    return found


def _fresh_copy(dest: Path) -> Path:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if not os.path.lexists(src):  # deleted in the working tree, not yet committed
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target, follow_symlinks=False)
    return dest


def _make(clone: Path, *args: str, python: Path, timeout: float = 600
          ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "MAKEFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "--no-print-directory", *args, f"PYTHON={python}",
                           f"UV={_uv()}"], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.fixture(scope="module")
def managed_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = scratch_python(tmp_path_factory.mktemp("pep668") / "python")
    refused = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "breadcrumb"],
                             capture_output=True, text=True, timeout=120, check=False)
    assert refused.returncode != 0
    assert "externally-managed-environment" in refused.stderr
    return python


def test_make_demo_runs_in_a_project_venv(managed_python: Path, tmp_path: Path) -> None:
    clone = _fresh_copy(tmp_path / "clone")
    done = _make(clone, "demo", f"DATA_DIR={tmp_path / 'data'}", python=managed_python)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "source_range" in done.stdout
    assert "evidence from" in done.stdout
    venv_python = clone / ".venv" / "bin" / "python"
    where = subprocess.run([str(venv_python), "-c",
                            "import sys, breadcrumb; print(sys.prefix != sys.base_prefix, "
                            "breadcrumb.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60,
                           check=True).stdout.split()
    assert where[0] == "True"
    assert Path(where[1]).resolve().is_relative_to(clone.resolve())


def test_make_test_installs_into_the_project_venv(managed_python: Path, tmp_path: Path) -> None:
    clone = _fresh_copy(tmp_path / "clone")
    done = _make(clone, "install", python=managed_python)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    venv_python = clone / ".venv" / "bin" / "python"
    probe = subprocess.run([str(venv_python), "-c",
                            "import breadcrumb.cli, pytest, faust, aiokafka, fastapi"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert probe.returncode == 0, probe.stderr
    plan = _make(clone, "-n", "test", python=managed_python)
    assert plan.returncode == 0, plan.stderr
    venv = str((clone / ".venv").resolve())
    steps = plan.stdout.splitlines()
    assert any(f"PYTHON={venv}/bin/python bash infra/services.sh up" in s for s in steps), steps
    assert any(".venv/bin/python -m pytest" in s for s in steps), steps
    assert not any("pip install" in s and ".venv" not in s for s in steps), steps

"""The README's commands on a fresh clone of the repository alone (nothing beside it).

A ``git clone`` of this checkout into an empty folder is what a user gets from a public
host: no ``../shared``, no sibling worktree, no machine paths. This test checks, there:

* no tracked file names a place outside the repository (a static scan for the sibling
  ``shared`` folder, this machine's ``/work`` tree and home directories), and every
  tracked symlink stays inside the clone;
* ``make install`` (the install half of ``make test``) builds the project venv there, and
  pytest collects every test module of the clone from it;
* ``make -n test`` installs the browser, starts the services and runs pytest, all with the
  clone's own venv; ``make -n demo`` ingests and recalls with it.

The full ``make test`` in such a clone is CI's job (``.ci/run``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = re.compile(r"\.\./shared|\bshared/(?:contracts|data)\b|(?<![\w.])/work/|infra-shared")
#: Home directories, in code only (recorded sessions in fixtures hold their authors' paths).
HOME = re.compile(r"(?<![\w.])/(?:home|Users|root)/[A-Za-z]")
CODE = re.compile(r"\.(py|sh|toml|cfg|ini|ya?ml)$|(^|/)Makefile$|^\.ci/")
#: Matches that are data, not reads: (file, matched text) -> why.
ALLOWED = {
    ("tests/unit/test_importers.py", "/home/d"): "a path inside an imported session's events",
    ("tests/unit/test_importers_agents.py", "/home/d"):
        "a session's working directory, as its fixture transcript records it",
    ("tests/unit/test_importers_agents.py", "/home/m"):
        "a session's working directory, as its fixture transcript records it",
    ("tests/e2e/test_first_hour_mistakes.py", "shared/contracts"):
        "asserts that --help no longer names the outside contract",
}
SKIPPED = ("tests/e2e/test_fresh_clone.py",)  # the scanner's own patterns
BINARY = re.compile(r"\.(png|jpg|ico|woff2?|gz|zip|whl)$|^reports/")


def _uv() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if found is None:
        pytest.fail("uv is not installed (it comes with the [test] extra)")
    return found


def _env() -> dict[str, str]:
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "MAKEFLAGS", "MAKELEVEL", "BREADCRUMB_LOCOMO_DIR")
    return {k: v for k, v in os.environ.items() if k not in drop}


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    empty = tmp_path_factory.mktemp("fresh")
    subprocess.run(["git", "clone", "-q", f"file://{ROOT}", str(empty / "breadcrumb")],
                   check=True, capture_output=True, timeout=300)
    assert sorted(os.listdir(empty)) == ["breadcrumb"]
    return empty / "breadcrumb"


def tracked(clone: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=clone, check=True,
                         capture_output=True).stdout.decode()
    return [name for name in out.split("\0") if name]


def test_no_tracked_file_names_a_place_outside_the_repository(clone: Path) -> None:
    found = []
    names = tracked(clone)
    assert "Makefile" in names and ".ci/run" in names and "docs/contract/API.md" in names
    for name in names:
        path = clone / name
        if name in SKIPPED or BINARY.search(name) or path.is_symlink():
            continue
        text = path.read_text("utf-8", errors="replace")
        hits = [*OUTSIDE.finditer(text), *(HOME.finditer(text) if CODE.search(name) else ())]
        for m in hits:
            if (name, m.group(0)) not in ALLOWED:
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{name}:{line}: {m.group(0)!r}")
    assert not found, "\n".join(found)


def test_the_scan_catches_what_it_looks_for() -> None:
    for bad in ("the data is read from ../shared/data/locomo", "/work/infra-shared",
                'default=Path("/work/benchcache")', "see shared/contracts/API.md"):
        assert OUTSIDE.search(bad), bad
    assert HOME.search('open("/home/alice/data.json")') and HOME.search("/Users/bob/x")
    assert CODE.search("tests/integration/faults.py") and CODE.search(".ci/run")
    assert CODE.search("Makefile") and not CODE.search("tests/fixtures/a.jsonl")
    for fine in ("docs/contract/API.md", "topics/schemas/event.schema.json",
                 "the shared ingest service", "network/workers"):
        assert not OUTSIDE.search(fine), fine


def test_tracked_symlinks_stay_inside_the_clone(clone: Path) -> None:
    links = [clone / n for n in tracked(clone) if (clone / n).is_symlink()]
    assert links  # breadcrumb/streams -> ../streams, ...
    for link in links:
        target = link.resolve()
        assert target.is_relative_to(clone.resolve()) and target.exists(), (link, target)


def test_install_and_collection_work_in_the_clone(clone: Path) -> None:
    done = subprocess.run(["make", "--no-print-directory", "install", f"UV={_uv()}",
                           f"PYTHON={sys.executable}"], cwd=clone, env=_env(),
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stderr == "", done.stderr[-3000:]  # the build's notes stay in the log
    python = clone / ".venv" / "bin" / "python"
    collected = subprocess.run([str(python), "-m", "pytest", "--collect-only", "-q",
                                "-p", "no:cacheprovider"], cwd=clone, env=_env(),
                               capture_output=True, text=True, timeout=600, check=False)
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    count = re.search(r"(\d+) tests? collected", collected.stdout)
    assert count and int(count.group(1)) > 500, collected.stdout[-500:]


def test_make_test_and_demo_plans_use_the_clone_alone(clone: Path) -> None:
    plans = {}
    for target in ("test", "demo"):
        done = subprocess.run(["make", "--no-print-directory", "-n", target, f"UV={_uv()}",
                               f"PYTHON={sys.executable}"], cwd=clone, env=_env(),
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        plans[target] = done.stdout.splitlines()
    venv = f"{clone}/.venv"
    test = plans["test"]
    order = [next(i for i, s in enumerate(test) if step in s)
             for step in ("pip install -q -e '.[test]'", "/bin/ruff check", "bash infra/browser.sh",
                          "bash infra/services.sh up", "/bin/python -m pytest")]
    assert order == sorted(order), test
    assert any(f"PYTHON={venv}/bin/python bash infra/services.sh up" in s for s in test), test
    uv = _uv()
    # the tools handed in (uv, the Python that makes the venv when the clone has none yet:
    # under xdist the install test may have run on another worker's clone) are not the repo
    assert all(str(ROOT) not in s.replace(uv, "UV").replace(sys.executable, "PYTHON")
               for s in test + plans["demo"])
    assert any(s.startswith(".venv/bin/breadcrumb recall") for s in plans["demo"]), plans["demo"]

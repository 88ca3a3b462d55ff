"""The wheel: one import name, a slim core, and an SDK that lives beside a user's own packages.

Builds the wheel with ``uv build``, installs it without extras in a fresh virtualenv and
works in a scratch project that has its own ``infra/`` and ``streams/`` packages.
Needs ``uv`` (the test extra installs it) and the package index or uv's cache.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_CORE_DISTRIBUTIONS = 20


def _uv() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if found is None:
        pytest.fail("uv is not installed (it comes with the [test] extra)")
    return found


def _run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run([_uv(), "build", "--quiet", "--wheel", "--out-dir", str(out), str(ROOT)])
    (found,) = out.glob("breadcrumb_memory-*.whl")
    return found


@pytest.fixture(scope="module")
def core_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    venv = tmp_path_factory.mktemp("core") / "venv"
    _run([_uv(), "venv", "--quiet", "--python", sys.executable, str(venv)])
    env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    _run([_uv(), "pip", "install", "--quiet", str(wheel)], env=env)
    yield venv


def test_the_wheel_holds_one_import_name(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert tops == {"breadcrumb"}
    for pkg in ("infra", "streams", "stores", "topics", "processors", "query_api"):
        assert f"breadcrumb/{pkg}/__init__.py" in names, pkg
    assert "breadcrumb/topics/schemas/event.schema.json" in names


def test_core_install_is_slim(core_venv: Path) -> None:
    site = next(core_venv.glob("lib/python3*/site-packages"))
    dists = sorted(p.name.split("-")[0].lower() for p in site.glob("*.dist-info"))
    assert "breadcrumb_memory" in dists
    assert len(dists) <= MAX_CORE_DISTRIBUTIONS, dists
    for heavy in ("fastapi", "aiokafka", "faust_streaming", "numpy", "qdrant_edge_py"):
        assert heavy not in dists


def test_sdk_imports_beside_a_project_with_its_own_infra_and_streams(
        core_venv: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    for pkg in ("infra", "streams"):
        (project / pkg).mkdir(parents=True)
        (project / pkg / "__init__.py").write_text(f"WHO = 'project {pkg}'\n")
    (project / "infra" / "settings.py").write_text("OWN = True\n")
    script = textwrap.dedent("""
        import sys
        from breadcrumb.sdk import HttpPublisher, InvalidEventError, checked
        import breadcrumb.clients.service
        import infra, infra.settings, streams
        assert infra.WHO == "project infra" and infra.settings.OWN, infra.__file__
        assert streams.WHO == "project streams", streams.__file__
        HttpPublisher("http://127.0.0.1:1")
        good = {"event_id": "e1", "user_id": "u", "thread_id": "t", "role": "user",
                "kind": "message", "content": "hi", "ts": "2026-01-01T00:00:00Z"}
        assert checked(good) == good
        try:
            checked({**good, "role": "robot"})
        except InvalidEventError as exc:
            assert exc.field == "role", exc
        else:
            raise AssertionError("an invalid role was accepted")
        heavy = sorted({"fastapi", "aiokafka", "jsonschema", "numpy"} & set(sys.modules))
        assert not heavy, heavy
        print("ok")
    """)
    python = core_venv / "bin" / "python"
    done = _run([str(python), "-c", script], cwd=project,
                env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.stdout.strip() == "ok"


@pytest.mark.parametrize(("argv", "extra"), [
    (["serve"], "server"),
    (["worker"], "cluster"),
    (["mcp", "--url", "http://127.0.0.1:1"], "server"),
])
def test_a_command_without_its_extra_names_it(core_venv: Path, wheel: Path, tmp_path: Path,
                                              argv: list[str], extra: str) -> None:
    done = subprocess.run([str(core_venv / "bin" / "breadcrumb"), *argv,
                           "--data-dir", str(tmp_path / "data")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    # installed from a wheel file (not an index): the extra comes from that same wheel
    assert lines[0].endswith(f"pip install '{wheel}[{extra}]'"), lines[0]


@pytest.fixture(scope="module")
def eval_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The wheel with its [eval] extra (which includes [server])."""
    venv = tmp_path_factory.mktemp("eval") / "venv"
    _run([_uv(), "venv", "--quiet", "--python", sys.executable, str(venv)])
    env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    _run([_uv(), "pip", "install", "--quiet", f"{wheel}[eval]"], env=env)
    yield venv


def test_eval_runs_from_an_empty_directory_of_an_installed_wheel(eval_venv: Path,
                                                                 tmp_path: Path) -> None:
    """The golden corpus and questions ship as package data (no checkout, no tests/)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    no_limits = tmp_path / "no-limits.json"
    no_limits.write_text("{}")
    done = subprocess.run(
        [str(eval_venv / "bin" / "breadcrumb"), "eval", "--fast", "--embedder", "hash",
         "--locomo-conversations", "0", "--thresholds", str(no_limits)],
        cwd=empty, capture_output=True, text=True, timeout=900, check=False,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    results = json.loads((empty / "reports" / "eval-fast.json").read_text("utf-8"))
    summary = results["golden"]["summary"]["breadcrumb"]
    assert summary["questions"] > 0
    assert results["ingest"]["golden_events"] > 0


def test_serve_runs_from_an_empty_directory_of_an_installed_wheel(eval_venv: Path,
                                                                  tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
           "BREADCRUMB_EMBEDDER": "hash"}
    server = subprocess.Popen([str(eval_venv / "bin" / "breadcrumb"), "serve", "--port",
                               str(port)], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, server.communicate()[1][-3000:]
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "serve did not answer within 120 s"
                time.sleep(0.2)
        assert health.status_code == 200, health.text
        assert (tmp_path / ".breadcrumb" / "server.json").exists()
    finally:
        server.terminate()
        server.wait(30)

"""Issue 12: data files 0600 and folders 0700; secrets never printed or logged."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from breadcrumb.settings import Settings
from tests.conftest import ROOT

SECRETS = {"BREADCRUMB_MYSQL_PASSWORD": "hunter2-mysql", "BREADCRUMB_OPENAI_API_KEY": "sk-leak",
           "BREADCRUMB_QDRANT_API_KEY": "qd-leak", "BREADCRUMB_S3_SECRET_KEY": "s3-leak"}


@pytest.fixture(autouse=True)
def keep_umask() -> Iterator[None]:
    old = os.umask(0o022)  # what a default shell gives the command
    try:
        yield
    finally:
        os.umask(old)


def _modes(root: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(root.stat().st_mode)}
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = Path(folder) / name
            if not path.is_symlink():
                out[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return out


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "breadcrumb.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_ingest_leaves_only_private_files(tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = _cli("ingest", "examples/agent-session.jsonl", "--data-dir", str(data),
                "--embedder", "hash", env=SECRETS)
    assert done.returncode == 0, done.stderr
    modes = _modes(data)
    assert any(name.endswith(".sqlite3") for name in modes) and len(modes) > 3
    loose = {name: oct(mode) for name, mode in modes.items() if mode & 0o077}
    assert loose == {}
    for secret in SECRETS.values():
        assert secret not in done.stdout + done.stderr


def test_an_old_world_readable_data_dir_is_tightened(tmp_path: Path) -> None:
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.stores.embedders.models import HashEmbedder

    data = tmp_path / "data"
    (data / "cold" / "archive").mkdir(parents=True)
    os.chmod(data, 0o755)
    os.chmod(data / "cold", 0o777)
    old = data / "cold" / "archive" / "x.jsonl.gz"
    old.write_bytes(b"old")
    os.chmod(old, 0o644)
    runtime = build_runtime(Settings(data_dir=data, embedder="hash"), embedder=HashEmbedder())
    try:
        loose = {name: oct(mode) for name, mode in _modes(data).items() if mode & 0o077}
        assert loose == {}
        assert stat.S_IMODE(old.stat().st_mode) == 0o600
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
    finally:
        runtime.stop()


def test_settings_never_show_secrets() -> None:
    settings = Settings(mysql_password="hunter2-mysql", openai_api_key="sk-leak",
                        qdrant_api_key="qd-leak", s3_secret_key="s3-leak",
                        s3_access_key="s3-access-leak")
    shown = repr(settings) + str(settings) + settings.model_dump_json() + str(
        settings.model_dump()) + repr(settings.with_overrides(port=9999))
    for secret in (*SECRETS.values(), "s3-access-leak"):
        assert secret not in shown


def test_invalid_settings_do_not_echo_secrets() -> None:
    done = _cli("recall", "x", "--user", "u", env={**SECRETS, "BREADCRUMB_PORT": "not-a-port"})
    assert done.returncode == 2 and "invalid settings" in done.stderr
    for secret in SECRETS.values():
        assert secret not in done.stderr + done.stdout

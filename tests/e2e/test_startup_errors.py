"""Start-up that explains itself (issue 13): the real CLI in a subprocess on a read-only
data dir, a corrupt SQLite file (header or table pages), a corrupt Qdrant Edge shard and a
low disk prints ONE line naming the file and the remedy, exits non-zero, no traceback."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, ROOT
from tests.e2e.test_data_dir_owner import free_port, one_line_error, run_cli

CLI = [sys.executable, "-m", "breadcrumb.cli"]


def serve(data: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``breadcrumb serve`` that is expected to refuse to start (bounded wait)."""
    return subprocess.run([*CLI, "serve", "--port", str(free_port()), "--data-dir", str(data),
                           "--embedder", "hash"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    """A data dir holding the example session."""
    path = tmp_path / "data"
    ingested = run_cli("ingest", str(EXAMPLE), data_dir=path)
    assert ingested.returncode == 0, ingested.stderr
    return path


@pytest.fixture()
def read_only(data: Path) -> Iterator[Path]:
    """The data dir made read-only: a read-only bind mount as root, else chmod."""
    if os.geteuid() == 0:
        subprocess.run(["mount", "--bind", "-o", "ro", str(data), str(data)], check=True)
        try:
            yield data
        finally:
            subprocess.run(["umount", str(data)], check=True)
    else:
        data.chmod(0o555)
        try:
            yield data
        finally:
            data.chmod(0o755)


def test_read_only_data_dir(read_only: Path) -> None:
    for result in (serve(read_only), run_cli("recall", "x", "--user", "demo",
                                             data_dir=read_only)):
        line = one_line_error(result)
        assert str(read_only / "breadcrumb.lock") in line
        assert "not writable" in line and "make it writable" in line


def test_corrupt_sqlite_header(data: Path) -> None:
    db = data / "breadcrumb.sqlite3"
    with db.open("r+b") as f:
        f.write(b"this is not sqlite" * 8)
    line = one_line_error(serve(data))
    assert f"{db} is corrupt" in line and "restore it from a backup" in line and ".recover" in line


def test_corrupt_table_pages(data: Path) -> None:
    db = data / "breadcrumb.sqlite3"
    with sqlite3.connect(db) as conn:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'raw_events'"
                            ).fetchone()[0]
    with db.open("r+b") as f:
        f.seek(page * (root - 1))
        f.write(b"\xa5" * page)
    line = one_line_error(serve(data))
    assert f"{db} is corrupt" in line and "restore it from a backup" in line


def test_corrupt_vector_shard_and_its_remedy(data: Path) -> None:
    shard = data / "vectors" / "memories"
    (shard / "edge_config.json").write_text("{not json")
    line = one_line_error(serve(data))
    assert f"vector index {data / 'vectors'}" in line and "breadcrumb replay" in line
    # the remedy: move it aside, start again, rebuild from the log
    shutil.move(str(data / "vectors"), str(data.parent / "vectors.broken"))
    replayed = run_cli("replay", "--name", "rebuilt", data_dir=data)
    assert replayed.returncode == 0, replayed.stderr
    recalled = run_cli("recall", "the email regex", "--user", "demo", "--json", data_dir=data)
    assert recalled.returncode == 0 and '"auth-refactor"' in recalled.stdout


def test_low_disk_refuses_to_start(data: Path) -> None:
    line = one_line_error(serve(data, BREADCRUMB_MIN_FREE_DISK_MB=str(10**9)))
    assert str(data) in line and "MB free" in line and "BREADCRUMB_MIN_FREE_DISK_MB" in line
    ok = run_cli("recall", "x", "--user", "demo", data_dir=data)
    assert ok.returncode == 0, ok.stderr  # the default threshold is met on this machine

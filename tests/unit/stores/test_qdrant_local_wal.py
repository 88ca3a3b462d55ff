"""qdrant-client local mode on WAL commits (issue 14): its SQLite files are switched from a
rollback journal (an fsync per point) to WAL with synchronous=NORMAL, and a point written
before a ``kill -9`` is there after it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from qdrant_client import QdrantClient

from breadcrumb.stores.vectors.server.index import QdrantServerIndex, wal_commits

CHILD = r"""
import sys, time
from qdrant_client import QdrantClient
from breadcrumb.stores.vectors.server.index import QdrantServerIndex
from tests.unit.stores.test_qdrant_indexes import EMB, add_memories, obs, uid
index = QdrantServerIndex(lambda: QdrantClient(path=sys.argv[1]), "p", EMB.dim)
index.ensure()
add_memories(index, [obs(uid(i), "u1", f"memory number {i}") for i in range(40)])
print("written", flush=True)
time.sleep(120)
"""


def _journal_modes(folder: Path) -> set[str]:
    modes = set()
    for db in folder.rglob("storage.sqlite"):
        with sqlite3.connect(db) as conn:
            modes.add(conn.execute("PRAGMA journal_mode").fetchone()[0])
    return modes


def test_local_mode_collections_commit_in_wal_mode(tmp_path: Path) -> None:
    index = QdrantServerIndex(lambda: QdrantClient(path=str(tmp_path / "q")), "p", 8)
    index.ensure()
    assert _journal_modes(tmp_path / "q") == {"wal"}
    assert wal_commits(index.client) == 0  # each collection is switched once
    sibling = index.sibling("g2")  # a replay generation's collections on the same client
    sibling.ensure()
    index.close()
    assert len(list((tmp_path / "q").rglob("storage.sqlite"))) == 4
    assert _journal_modes(tmp_path / "q") == {"wal"}


def test_points_written_before_a_kill_survive_it(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    root = Path(__file__).resolve().parents[3]
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(folder)], cwd=root,
                             stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(root)})
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"written"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    index = QdrantServerIndex(lambda: QdrantClient(path=str(folder)), "p", 8)
    try:
        assert index.count()["memories"] == 40
    finally:
        index.close()

"""The ``footprint`` block of ``/v1/stats`` (issue 49, ``infra/footprint.py``) and its
``breadcrumb stats`` lines."""

from __future__ import annotations

import os
from pathlib import Path

from breadcrumb.commands.stats import stats_lines
from breadcrumb.infra.footprint import FootprintProbe, disk_bytes, footprint, resident_bytes

ROLLUP = """55fdf712a000-7fffbe0c2000 ---p 00000000 00:00 0                          [rollup]
Rss:               10240 kB
Pss:                 228 kB
Anonymous:          4096 kB
Swap:                  0 kB
"""


def _write(path: Path, size: int) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))
    return os.lstat(path).st_blocks * 512


def _sparse(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.truncate(size)  # apparent size only, like Qdrant's preallocated files


def test_disk_bytes_by_part_counts_allocated_blocks(tmp_path: Path) -> None:
    want = {"sqlite": _write(tmp_path / "breadcrumb.sqlite3", 40_000)
            + _write(tmp_path / "breadcrumb.sqlite3-wal", 9_000),
            "vector_segments": _write(tmp_path / "vectors/chunks/segments/s1/payload.dat", 30_000)
            + _write(tmp_path / "vectors/memories.g2/edge_config.json", 100),
            "vector_wal": _write(tmp_path / "vectors/chunks/wal/open-1", 20_000),
            "other": _write(tmp_path / "breadcrumb.lock", 10)}
    # a replay generation's own database and vectors
    want["sqlite"] += _write(tmp_path / "generations/g1/derived.sqlite3", 8_000)
    want["vector_wal"] += _write(tmp_path / "generations/g1/vectors/memories/wal/open-2", 5_000)
    _sparse(tmp_path / "vectors/chunks/wal/open-3", 32 * 2**20)  # allocates (almost) nothing
    got = disk_bytes(tmp_path)
    assert got["vector_wal"] - want["vector_wal"] <= 8192
    assert {k: got[k] for k in ("sqlite", "vector_segments", "other")} == {
        k: want[k] for k in ("sqlite", "vector_segments", "other")}
    assert got["total"] == sum(got[k] for k in ("sqlite", "vector_segments", "vector_wal",
                                                "other"))


def test_resident_bytes_from_smaps_rollup(tmp_path: Path) -> None:
    rollup = tmp_path / "smaps_rollup"
    rollup.write_text(ROLLUP)
    assert resident_bytes(rollup) == {"anonymous": 4096 * 1024, "file_backed": 6144 * 1024}
    assert resident_bytes(tmp_path / "absent") is None
    assert resident_bytes(Path("/proc/self/smaps_rollup")) is None or \
        resident_bytes()["anonymous"] > 0  # type: ignore[index]


def test_footprint_per_stored_event(tmp_path: Path) -> None:
    rollup = tmp_path / "smaps_rollup"
    rollup.write_text(ROLLUP)
    data = tmp_path / "data"
    size = _write(data / "breadcrumb.sqlite3", 50_000)
    block = footprint(data, 10, rollup)
    assert block["stored_events"] == 10
    assert block["disk_bytes"]["total"] == size
    assert block["disk_bytes_per_event"] == round(size / 10, 1)
    assert block["rss_bytes_per_event"] == {"anonymous": 4096 * 1024 / 10,
                                            "file_backed": 6144 * 1024 / 10}
    empty = footprint(data, 0, rollup)
    assert empty["disk_bytes_per_event"] is None and empty["rss_bytes_per_event"] is None
    assert "rss_bytes" not in footprint(data, 10, tmp_path / "absent")


def test_probe_reuses_a_snapshot_until_it_is_old(tmp_path: Path) -> None:
    counts = iter(range(1, 100))
    probe = FootprintProbe(tmp_path, lambda: next(counts), max_age=3600)
    assert probe.snapshot()["stored_events"] == 1
    assert probe.snapshot()["stored_events"] == 1  # reused
    fresh = FootprintProbe(tmp_path, lambda: next(counts), max_age=0)
    assert fresh.snapshot()["stored_events"] == 2
    assert fresh.snapshot()["stored_events"] == 3


def test_stats_lines_show_the_footprint() -> None:
    answer = {"mode": "embedded", "generation": "main", "events_received": 4,
              "events_accepted": 4, "events_processed": 4, "pending": 0, "dead_letters": 0,
              "memories": {"by_status": {"active": 2}},
              "footprint": {"stored_events": 4,
                            "disk_bytes": {"sqlite": 8192, "vector_segments": 4096,
                                           "vector_wal": 2048, "other": 0, "total": 14336},
                            "rss_bytes": {"anonymous": 2**20, "file_backed": 2**21}}}
    lines = [" ".join(line.split()) for line in stats_lines(answer).splitlines()]
    assert "footprint: 4 stored events" in lines
    assert "sqlite 8.00 KB 2.00 KB" in lines  # the part, then per stored event
    assert "total 14.00 KB 3.50 KB" in lines
    assert "anonymous 1.00 MB 256.00 KB" in lines
    without = stats_lines({**answer, "footprint": None})
    assert "footprint" not in without and "active 2" in without

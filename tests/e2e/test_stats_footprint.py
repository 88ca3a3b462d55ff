"""``breadcrumb stats`` and ``/v1/stats`` → ``footprint`` on a real data dir (issue 49)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import EXAMPLE
from tests.e2e.test_data_dir_owner import run_cli


def test_stats_show_the_data_dirs_footprint(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ingest = run_cli("ingest", str(EXAMPLE), data_dir=data)
    assert ingest.returncode == 0, ingest.stderr
    answer = run_cli("stats", "--json", data_dir=data)
    assert answer.returncode == 0, answer.stderr
    stats = json.loads(answer.stdout)
    assert stats["events_processed"] == 31  # the counts are still there
    foot = stats["footprint"]
    assert foot["stored_events"] == 31
    disk = foot["disk_bytes"]
    assert disk["sqlite"] > 0 and disk["vector_segments"] > 0 and disk["vector_wal"] > 0
    assert disk["total"] == sum(disk[k] for k in ("sqlite", "vector_segments", "vector_wal",
                                                  "other"))
    assert foot["disk_bytes_per_event"] == round(disk["total"] / 31, 1)
    assert foot["rss_bytes"]["anonymous"] > 0
    text = run_cli("stats", data_dir=data)
    assert text.returncode == 0, text.stderr
    assert "footprint: 31 stored events" in text.stdout and "vector_wal" in text.stdout


def test_stats_refuse_an_unknown_data_dir(tmp_path: Path) -> None:
    refused = run_cli("stats", data_dir=tmp_path / "absent")
    assert refused.returncode == 2 and "no data dir" in refused.stderr
    assert not (tmp_path / "absent").exists()

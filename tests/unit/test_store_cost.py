"""The store-cost bench's baseline: the smallest size's runs folded into their medians."""

from __future__ import annotations

from bench.store_cost import median_result


def test_a_baseline_is_each_figures_median_over_its_runs() -> None:
    runs = [{"size": 10, "recall_p95_ms": p95, "ingest_events_per_s": rate, "kept_dir": d,
             "rss": {"anon": anon}, "replay_state": "done", "live_footprint": None}
            for p95, rate, d, anon in [(55.0, 600.0, "a", 3), (24.9, 750.0, "b", 1),
                                       (33.9, 620.0, "c", 2)]]
    merged = median_result(runs)
    assert merged["recall_p95_ms"] == 33.9 and merged["ingest_events_per_s"] == 620.0
    assert merged["rss"] == {"anon": 2} and merged["size"] == 10
    assert merged["kept_dir"] == "a" and merged["replay_state"] == "done"
    assert [r["recall_p95_ms"] for r in merged["runs"]] == [55.0, 24.9, 33.9]
    assert median_result(runs[:1]) is runs[0]  # one run: its own figures

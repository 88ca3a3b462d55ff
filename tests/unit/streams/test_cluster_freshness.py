"""Cluster freshness (issue 14): a worker's batches add each first-consumed message's
accepted → recallable (and → memory when it closed a range) to histogram counters in the
batch's transaction; ``/v1/stats`` reads p50 / p95 back from them (all workers)."""

from __future__ import annotations

import time
from pathlib import Path

from breadcrumb.streams.freshness import BUCKETS_MS, bucket_counter, summary_from_counters
from breadcrumb.streams.kafka.batch import BatchIngest, Message
from tests.unit.streams.test_faust_agent import Harness
from tests.unit.streams.test_faust_batch import _stream


def test_buckets_and_quantiles_from_counters() -> None:
    assert bucket_counter("recallable", 0.0) == "freshness_recallable_le_10"
    assert bucket_counter("recallable", 0.011) == "freshness_recallable_le_12"
    assert bucket_counter("memory", 1e6) == "freshness_memory_le_inf"
    assert list(BUCKETS_MS) == sorted(set(BUCKETS_MS))
    counters = {bucket_counter("recallable", 0.05): 90, bucket_counter("recallable", 2.0): 10,
                "events_processed": 7}
    fresh = summary_from_counters(counters)
    p50_bound = int(bucket_counter("recallable", 0.05).rsplit("_", 1)[1])
    p95_bound = int(bucket_counter("recallable", 2.0).rsplit("_", 1)[1])
    assert fresh["recallable_ms"] == {"p50": p50_bound, "p95": p95_bound, "samples": 100}
    assert 50 <= p50_bound <= 50 * 1.25 and 2000 <= p95_bound <= 2000 * 1.25
    assert fresh["memory_ms"] == {"p50": None, "p95": None, "samples": 0}


async def test_a_batch_counts_freshness_once_per_message(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    try:
        stream = _stream(1)
        accepted = time.time() - 3.0  # accepted 3 s ago
        messages = [Message(k.encode(), v, f"t-agent-events/0/{n}", accepted=accepted)
                    for n, (k, v) in enumerate(stream)]
        batch = BatchIngest(h.agent)
        started = time.time()
        outcomes = await batch.handle_batch(messages)
        took = time.time() - started
        fresh = summary_from_counters(h.store.counters.get_counters())
        events = outcomes.count("processed")
        assert events and fresh["recallable_ms"]["samples"] == events
        # between accepted → batch start and accepted → batch end (a bucket's upper bound)
        assert 3000 <= fresh["recallable_ms"]["p50"] <= 1000 * (3 + took) * 1.25 + 1
        closing = fresh["memory_ms"]["samples"]
        assert 0 < closing <= len(messages)
        await batch.handle_batch(messages[:10])  # redelivered: not counted again
        again = summary_from_counters(h.store.counters.get_counters())
        assert again["recallable_ms"]["samples"] == events
        assert again["memory_ms"]["samples"] == closing
    finally:
        h.close()

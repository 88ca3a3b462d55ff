"""Cluster worker derivation rate (issue 14), each figure as a ratio to a same-run baseline.

The worker's own code path without the broker: the messages a Faust worker would consume
(the golden corpus × N, one key per thread, then a flush marker per thread) are handed to
the ingest agent in-process, on the real MariaDB (a scratch database per run), with the
hash embedder so the figures measure the pipeline and the stores, not the model:

* ``one-at-a-time + qdrant-client local`` — ``IngestAgent.handle`` per message, the worker
  before issue 14 (the **baseline**);
* ``batched + qdrant-client local`` — ``BatchIngest.handle_batch`` per N messages;
* ``batched + Qdrant Edge`` — the same with the embedded runner's vector index;
* ``batched + null index`` — vectors dropped: SQL, processors and embedding only.

Needs the services (``infra/services.sh up``).

    python -m bench.cluster_derive [--copies 10] [--batch 256] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from bench.replay import copies
from breadcrumb.infra.settings import Settings
from breadcrumb.stores.embedders import HashEmbedder
from breadcrumb.streams.faust_batch import Message
from breadcrumb.topics.records import FlushMarker


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def messages_for(events: list[dict[str, Any]]) -> list[Message]:
    """Keyed messages in the corpus order, then one flush marker per thread."""
    keyed = [(f"{e['user_id']}/{e['thread_id']}", orjson.dumps(e)) for e in events]
    for user, thread in sorted({(e["user_id"], e["thread_id"]) for e in events}):
        marker = FlushMarker(user, thread, "2026-11-30T00:00:00Z", "flush").to_dict()
        keyed.append((f"{user}/{thread}", orjson.dumps(marker)))
    return [Message(k.encode(), v, f"bench-agent-events/0/{n}") for n, (k, v) in
            enumerate(keyed)]


class NullSink:
    async def send(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        return None


class NullIndex:
    """A vector index that keeps nothing (the "null vector index" of the issue)."""

    def ensure(self) -> None: ...

    def close(self) -> None: ...

    def upsert_memories(self, *args: Any) -> None: ...

    def upsert_chunks(self, *args: Any) -> None: ...

    def set_memory_payload(self, *args: Any) -> None: ...


def _index(kind: str, settings: Settings, dim: int) -> Any:
    if kind == "edge":
        from breadcrumb.stores.qdrant_edge_index import QdrantEdgeIndex

        return QdrantEdgeIndex(settings.data_dir / "edge", dim)
    if kind == "null":
        return NullIndex()
    return None  # build_worker_parts: qdrant-client local mode under data_dir/qdrant


async def _drive(parts: Any, messages: Sequence[Message], batch: int) -> None:
    from breadcrumb.streams.faust_agent import IngestAgent
    from breadcrumb.streams.faust_batch import BatchIngest
    from breadcrumb.streams.tracking import IdleTracker

    agent = IngestAgent(parts, NullSink(), {}, IdleTracker(3600))
    if batch <= 1:
        for m in messages:
            await agent.handle(m.key, m.value, m.position)
        return
    batcher = BatchIngest(agent)
    for start in range(0, len(messages), batch):
        await batcher.handle_batch(messages[start:start + batch])
    assert batcher.fallbacks == 0, "a batch fell back to one message at a time"


def run(kind: str, batch: int, messages: Sequence[Message], events: int,
        profile: bool = False) -> float:
    """Events per second for one variant (fresh database and index)."""
    from breadcrumb.infra.worker_parts import build_worker_parts
    from tests.integration.conftest import drop_database, fresh_database

    tag = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(mode="cluster", data_dir=Path(tmp), embedder="hash",
                            mysql_database=fresh_database(f"derive_{tag}"),
                            qdrant_collection_prefix=f"d{tag}")
        embedder = HashEmbedder()
        parts = build_worker_parts(settings, embedder, _index(kind, settings, embedder.dim))
        prof = cProfile.Profile() if profile else None
        try:
            started = time.perf_counter()
            if prof:
                prof.enable()
            asyncio.run(_drive(parts, messages, batch))
            if prof:
                prof.disable()
            elapsed = time.perf_counter() - started
            assert parts.store.count_events() == events, "not every event was derived"
        finally:
            parts.close()
            drop_database(settings.mysql_database)
    if prof:
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(30)
        out(text.getvalue())
    return events / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--profile", action="store_true", help="cProfile the Edge run")
    args = parser.parse_args()
    events = copies(args.copies)
    messages = messages_for(events)
    n = len(events)
    out(f"{n} events of {len({e['thread_id'] for e in events})} threads + flush markers, "
        f"hash embedder, MariaDB; batch {args.batch}")
    base = run("local", 1, messages, n)
    out(f"one-at-a-time + qdrant-client local  {base:8.1f} ev/s   1.00x (baseline)")
    for kind, label in (("local", "batched + qdrant-client local"),
                        ("edge", "batched + Qdrant Edge        "),
                        ("null", "batched + null index         ")):
        rate = run(kind, args.batch, messages, n, profile=args.profile and kind == "edge")
        out(f"{label}  {rate:8.1f} ev/s   {rate / base:.2f}x")


if __name__ == "__main__":
    main()

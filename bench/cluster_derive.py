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

    python -m bench.cluster_derive [--copies 10] [--batch 256] [--rounds 3] [--statements]
        [--only local1 --only null] [--profile]

Each line prints events/s (wall clock, the database's round trips included), CPU ms per
event of this process (the worker's own cost; MariaDB's CPU is not in it) and SQL
statements per event (``--statements``), with ratios to the first line of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench.replay import copies
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.streams.kafka.batch import Message
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
        from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex

        return QdrantEdgeIndex(settings.data_dir / "edge", dim)
    if kind == "null":
        return NullIndex()
    return None  # build_worker_parts: qdrant-client local mode under data_dir/qdrant


class InlineExecutor(Executor):
    """Runs the agent's executor work on the calling thread (so cProfile sees it)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
            future.set_exception(exc)
        return future


async def drive(parts: Any, messages: Sequence[Message], batch: int,
                inline: bool = False, sink: Any = None) -> None:
    """Hand ``messages`` to the worker's ingest agent as Faust would: one at a time
    (``batch`` 1) or ``batch`` at a time (``tests/integration/test_cluster_derive_same``
    drives it too, with a sink that keeps what is sent)."""
    from breadcrumb.streams.kafka.agent import IngestAgent
    from breadcrumb.streams.kafka.batch import BatchIngest
    from breadcrumb.streams.tracking import IdleTracker

    agent = IngestAgent(parts, NullSink() if sink is None else sink, IdleTracker(3600),
                        executor=InlineExecutor() if inline else None)
    if batch <= 1:
        for m in messages:
            await agent.handle(m.key, m.value, m.position)
        return
    batcher = BatchIngest(agent)
    for start in range(0, len(messages), batch):
        await batcher.handle_batch(messages[start:start + batch])
    assert batcher.fallbacks == 0, "a batch fell back to one message at a time"


class StatementCount:
    """SQL round trips of a store, by the statement's first words (``--statements``): their
    number, wall time and this thread's CPU time in them (wall minus CPU: waiting for the
    database, its own work on the statement included)."""

    def __init__(self, store: Any) -> None:
        from collections import Counter

        self.by_kind: Counter[str] = Counter()
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        for name in ("_execute", "_execute_many", "_fetch"):
            setattr(store, name, self._wrap(getattr(store, name), name))

    def _wrap(self, fn: Any, name: str) -> Any:
        def counted(sql: str, *args: Any) -> Any:
            kind = f"{name[1:]:12} {' '.join(sql.split()[:4])[:60]}"
            self.by_kind[kind] += 1
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(sql, *args)
            finally:
                self.seconds[kind] = self.seconds.get(kind, 0.0) + time.perf_counter() - started
                self.cpu[kind] = self.cpu.get(kind, 0.0) + time.thread_time() - cpu
        return counted


@dataclass
class Figure:
    """One variant's run: wall-clock rate, CPU time of this process, SQL round trips."""

    rate: float  # events per second (wall clock)
    cpu_ms: float  # CPU ms per event of this process (all threads; the database not incl.)
    statements: float  # SQL statements per event (0 unless counted)


def run(kind: str, batch: int, messages: Sequence[Message], events: int,
        profile: bool = False, statements: bool = False) -> Figure:
    """One variant on a fresh database and index."""
    from breadcrumb.infra.worker_parts import build_worker_parts
    from tests.integration.conftest import drop_database, fresh_database

    tag = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(mode="cluster", data_dir=Path(tmp), embedder="hash",
                            mysql_database=fresh_database(f"derive_{tag}"),
                            qdrant_collection_prefix=f"d{tag}")
        embedder = HashEmbedder()
        parts = build_worker_parts(settings, embedder, _index(kind, settings, embedder.dim))
        counter = StatementCount(parts.store) if statements else None
        prof = cProfile.Profile() if profile else None
        try:
            started, cpu = time.perf_counter(), time.process_time()
            if prof:
                prof.enable()
            asyncio.run(drive(parts, messages, batch, inline=profile))
            if prof:
                prof.disable()
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            assert parts.store.events.count_events() == events, "not every event was derived"
        finally:
            parts.close()
            drop_database(settings.mysql_database)
    total = sum(counter.by_kind.values()) if counter else 0
    if counter:
        out(f"{kind} batch {batch}: {total} SQL statements, {total / events:.2f} per event")
        out(f"  {'count':>7} {'wall':>9}    {'wait':>9}")
        for name, n in counter.by_kind.most_common(25):
            wall = counter.seconds.get(name, 0.0)
            wait = wall - counter.cpu.get(name, 0.0)
            out(f"  {n:7d} {1000 * wall:9.1f} ms {1000 * wait:9.1f} ms  {name}")
    if prof:
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(40)
        out(text.getvalue())
    return Figure(events / elapsed, 1000 * cpu / events, total / events)


VARIANTS = (("local", 1, "one-at-a-time + qdrant-client local"),
            ("local", 0, "batched + qdrant-client local"),
            ("edge", 0, "batched + Qdrant Edge"),
            ("null", 0, "batched + null index"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every variant this many times, interleaved; medians")
    parser.add_argument("--only", choices=("local1", "local", "edge", "null"), action="append",
                        help="run only these variants (local1: one at a time)")
    parser.add_argument("--statements", action="store_true",
                        help="count SQL statements (adds a little CPU per statement)")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile each batched run (executor work run inline)")
    args = parser.parse_args()
    events = copies(args.copies)
    messages = messages_for(events)
    n = len(events)
    out(f"{n} events of {len({e['thread_id'] for e in events})} threads + flush markers, "
        f"hash embedder, MariaDB; batch {args.batch}; {args.rounds} round(s)")
    chosen = [v for v in VARIANTS if not args.only
              or (v[0] + ("1" if v[1] == 1 else "")) in args.only]
    figures: dict[str, list[Figure]] = {label: [] for _k, _b, label in chosen}
    for _ in range(args.rounds):
        for kind, size, label in chosen:
            figures[label].append(run(kind, size or args.batch, messages, n,
                                      profile=args.profile and size != 1,
                                      statements=args.statements))
    medians = {label: Figure(*(statistics.median(getattr(f, a) for f in runs)
                               for a in ("rate", "cpu_ms", "statements")))
               for label, runs in figures.items()}
    base = next(iter(medians.values()))
    out(f"{'variant':36} {'ev/s':>8} {'ratio':>6} {'CPU ms/ev':>10} {'ratio':>6} "
        f"{'SQL/ev':>7}  (first line = baseline; CPU = this process, not the database)")
    for label, f in medians.items():
        out(f"{label:36} {f.rate:8.1f} {f.rate / base.rate:5.2f}x {f.cpu_ms:10.3f} "
            f"{base.cpu_ms / f.cpu_ms:5.2f}x {f.statements:7.2f}")


if __name__ == "__main__":
    main()

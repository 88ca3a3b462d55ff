"""Publish throughput (events/s accepted) of the SDK, as ratios to raw baselines.

    python bench/publish.py [--events 20000] [--http-events 5000] [--repeat 2]

Kafka: ``Publisher.publish_many`` (contract validation + orjson + keyed idempotent
send, acks=all) against a raw aiokafka producer with the same settings sending the
same pre-serialised bytes without validation. HTTP: ``HttpPublisher.publish_many``
against raw httpx POSTs of the same pre-serialised batches, both to an embedded
``breadcrumb serve`` subprocess on 127.0.0.1 (hash embedder, throw-away data dir).
Every run publishes fresh event ids (no duplicates). Needs Kafka on 127.0.0.1:9092.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
from aiokafka import AIOKafkaProducer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from breadcrumb.commands.fleet import SimulatedAgent  # noqa: E402
from breadcrumb.infra.cluster import declare_topics  # noqa: E402
from breadcrumb.infra.topic_admin import TopicAdmin  # noqa: E402
from breadcrumb.sdk import HttpPublisher, Publisher, checked  # noqa: E402
from breadcrumb.settings import Settings  # noqa: E402
from breadcrumb.topics.kafka_security import started  # noqa: E402
from breadcrumb.topics.names import topic_specs  # noqa: E402


def make_events(count: int, threads: int = 50) -> list[dict[str, Any]]:
    """Realistic coding-agent events from the fleet simulator, fresh ids every call."""
    run = uuid.uuid4().hex[:8]
    agents = [SimulatedAgent(n, run, 7, users=4) for n in range(threads)]
    return [agents[i % threads].next_event() for i in range(count)]


def keyed(events: list[dict[str, Any]]) -> list[tuple[bytes, bytes]]:
    return [(f"{e['user_id']}/{e['thread_id']}".encode(), orjson.dumps(e)) for e in events]


async def kafka_raw(settings: Settings, events: list[dict[str, Any]]) -> float:
    """Baseline: aiokafka, same producer settings, bytes prepared before the clock starts."""
    pairs = keyed(events)
    producer = await started(AIOKafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap, acks="all", enable_idempotence=True,
        linger_ms=5, max_batch_size=256 * 1024))
    try:
        begun = time.perf_counter()
        futures = [await producer.send(settings.topic("agent-events"), value, key=key)
                   for key, value in pairs]
        await asyncio.gather(*futures)
        return time.perf_counter() - begun
    finally:
        await producer.stop()


async def kafka_sdk(settings: Settings, events: list[dict[str, Any]]) -> float:
    async with Publisher(settings=settings) as pub:
        started = time.perf_counter()
        receipts = await pub.publish_many(events)
        elapsed = time.perf_counter() - started
    assert len(receipts) == len(events)
    return elapsed


async def http_raw(url: str, events: list[dict[str, Any]], batch: int) -> float:
    """Baseline: httpx POSTs of pre-serialised ``{"events": [...]}`` bodies, no validation."""
    bodies = [orjson.dumps({"events": events[i:i + batch]}) for i in range(0, len(events), batch)]
    accepted = 0
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        started = time.perf_counter()
        for body in bodies:
            response = await http.post("/v1/events", content=body,
                                       headers={"content-type": "application/json"})
            accepted += response.json()["accepted"]
        elapsed = time.perf_counter() - started
    assert accepted == len(events), accepted
    return elapsed


async def http_sdk(url: str, events: list[dict[str, Any]], batch: int) -> float:
    async with HttpPublisher(url, batch_size=batch) as pub:
        started = time.perf_counter()
        answer = await pub.publish_many(events)
        elapsed = time.perf_counter() - started
    assert answer["accepted"] == len(events), answer
    return elapsed


def validation_only(events: list[dict[str, Any]]) -> float:
    started = time.perf_counter()
    for event in events:
        checked(event)
    return time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(data_dir: Path, embedder: str = "hash", wait_s: float = 90
                 ) -> tuple[subprocess.Popen[bytes], str]:
    """``breadcrumb serve`` (embedded) on a free port, its log beside ``data_dir``; returns
    once ``/healthz`` answers (else kills it and exits)."""
    port = free_port()
    env = {**os.environ, "BREADCRUMB_MODE": "embedded", "BREADCRUMB_EMBEDDER": embedder}
    proc = subprocess.Popen([sys.executable, "-m", "breadcrumb.cli", "serve", "--port",
                             str(port), "--data-dir", str(data_dir)],
                            stdout=(data_dir.parent / "serve.log").open("wb"),
                            stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("breadcrumb serve did not come up")


def best_rate(count: int, times: list[float]) -> float:
    return count / min(times)


async def bench_kafka(args: argparse.Namespace) -> dict[str, float]:
    settings = Settings(topic_prefix=f"bench{uuid.uuid4().hex[:8]}-")
    await declare_topics(settings)
    raw: list[float] = []
    sdk: list[float] = []
    try:
        await kafka_raw(settings, make_events(1000))  # warm-up: metadata, leaders
        for _ in range(args.repeat):
            raw.append(await kafka_raw(settings, make_events(args.events)))
            sdk.append(await kafka_sdk(settings, make_events(args.events)))
    finally:
        async with TopicAdmin(settings.kafka_bootstrap) as admin:
            await admin.delete(spec.name for spec in topic_specs(settings.topic_prefix))
    return {"raw": best_rate(args.events, raw), "sdk": best_rate(args.events, sdk)}


async def bench_http(args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(Path(tmp) / "data")
        raw: list[float] = []
        sdk: list[float] = []
        try:
            await http_raw(url, make_events(500), args.batch)  # warm-up
            for _ in range(args.repeat):
                raw.append(await http_raw(url, make_events(args.http_events), args.batch))
                sdk.append(await http_sdk(url, make_events(args.http_events), args.batch))
        finally:
            proc.terminate()
            proc.wait(30)
    return {"raw": best_rate(args.http_events, raw), "sdk": best_rate(args.http_events, sdk)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--http-events", type=int, default=5_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    sample = make_events(args.events)
    check_rate = args.events / validation_only(sample)
    kafka = asyncio.run(bench_kafka(args))
    http = asyncio.run(bench_http(args))
    rows = [
        ("client-side validation only", check_rate, None),
        ("kafka raw aiokafka (baseline)", kafka["raw"], 1.0),
        ("kafka SDK Publisher", kafka["sdk"], kafka["sdk"] / kafka["raw"]),
        ("http raw httpx POST (baseline)", http["raw"], 1.0),
        ("http SDK HttpPublisher", http["sdk"], http["sdk"] / http["raw"]),
    ]
    print(f"publish throughput: {args.events} events (kafka), {args.http_events} (http), "
          f"batch {args.batch}, best of {args.repeat}")
    for name, rate, ratio in rows:
        shown = f"{ratio:6.2f}x baseline" if ratio is not None else ""
        print(f"  {name:34s} {rate:10.0f} events/s  {shown}")
    print(f"  {'http SDK / kafka SDK':34s} {'':10s}            "
          f"{http['sdk'] / kafka['sdk']:6.2f}x")
    print(orjson.dumps({"validation_eps": round(check_rate), "kafka": kafka, "http": http,
                        "kafka_ratio": kafka["sdk"] / kafka["raw"],
                        "http_ratio": http["sdk"] / http["raw"]}).decode())


if __name__ == "__main__":
    main()

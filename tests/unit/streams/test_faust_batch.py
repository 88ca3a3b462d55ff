"""The micro-batched cluster agent (``streams.kafka.batch``) without a broker: the same
harness as the one-message agent (SQL store, qdrant-client local mode, a list sink);
batches must give exactly what one message at a time gives."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from breadcrumb.eval.corpus import golden_events
from breadcrumb.streams.kafka import agent as fa
from breadcrumb.streams.kafka.batch import BatchIngest, Message
from breadcrumb.topics.records import Event, FlushMarker
from tests.unit.streams.test_faust_agent import NOW, Harness, _key, failing_blocks


def _stream(copies: int = 2) -> list[tuple[str, bytes]]:
    """Golden events of several threads interleaved, then a flush marker per thread."""
    events = [{**e, "event_id": f"{e['event_id']}~{k}", "thread_id": f"{e['thread_id']}~{k}"}
              for k in range(copies) for e in golden_events()]
    by_thread: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_thread.setdefault(_key(e), []).append(e)
    queues = list(by_thread.values())
    out: list[tuple[str, bytes]] = []
    while any(queues):  # round robin: every batch mixes threads
        for q in queues:
            if q:
                e = q.pop(0)
                out.append((_key(e), orjson.dumps(e)))
    for key in by_thread:
        user, thread = key.split("/", 1)
        out.append((key, orjson.dumps(FlushMarker(user, thread, NOW, "flush").to_dict())))
    return out


def _messages(stream: list[tuple[str, bytes]], start: int = 0) -> list[Message]:
    return [Message(k.encode(), v, f"t-agent-events/0/{n}")
            for n, (k, v) in enumerate(stream, start)]


def _snapshot(h: Harness) -> dict[str, Any]:
    """What derivation produced: memories (id, range, facts), chunks, vectors, letters."""
    store = h.store
    memories = {}
    users = {u for (u,) in store.db.fetch("SELECT DISTINCT user_id FROM agent_memories")}
    for user in users:
        for m in store.memories.list_memories(user, 10_000, 0):
            d = m.to_dict()
            d.pop("created_at", None)
            memories[m.id] = (d, [c.text for c in store.chunks.get_chunks(user, m.id)])
    vectors = {}
    client = h.parts.index.client
    for name in ("memories", "chunks"):
        points, _ = client.scroll(h.parts.index.collection(name), limit=100_000,
                                  with_vectors=True, with_payload=False)
        vectors.update({str(p.id): [round(x, 5) for x in p.vector.get("dense", [])]
                        for p in points})
    counters = {k: v for k, v in store.counters.get_counters().items()}
    return {"memories": memories, "vectors": vectors, "events": store.events.count_events(),
            "letters": sorted((p, r) for p, r, _ in store.dead_letters.dead_letter_positions()),
            "counters": counters,
            "states": {k: v for k, v in store.states.list_states(pending_only=False)}}


@pytest.fixture()
def pair(tmp_path: Path) -> Iterator[tuple[Harness, Harness]]:
    one, many = Harness(tmp_path / "one"), Harness(tmp_path / "many")
    yield one, many
    one.close()
    many.close()


async def test_batches_give_what_one_message_at_a_time_gives(
        pair: tuple[Harness, Harness]) -> None:
    one, many = pair
    stream = _stream()
    stream.insert(7, ("demo/t", b"{oops"))  # poison inside a batch: dead-lettered in it
    messages = _messages(stream)
    singly = [await one.agent.handle(m.key, m.value, m.position) for m in messages]
    batch = BatchIngest(many.agent)
    batched: list[str] = []
    for i in range(0, len(messages), 37):
        batched += await batch.handle_batch(messages[i:i + 37])
    assert batch.batches == -(-len(messages) // 37) and batch.fallbacks == 0
    assert batched == singly and singly.count("rejected") == 1
    a, b = _snapshot(one), _snapshot(many)
    assert a["memories"] and len(a["memories"]) > 10 and a["vectors"]
    assert b == a
    obs_one = sorted(orjson.loads(v)["id"] for t, _k, v in one.sink.sent
                     if t == fa.OBSERVATIONS and v)
    obs_many = sorted(orjson.loads(v)["id"] for t, _k, v in many.sink.sent
                      if t == fa.OBSERVATIONS and v)
    assert obs_many == obs_one and len(obs_one) == len(a["memories"])
    assert [orjson.loads(v or b"")["position"] for t, _k, v in many.sink.sent
            if t == fa.DEAD_LETTERS] == ["t-agent-events/0/7"]

    # redelivered (a crash before the offsets were committed): nothing new is derived
    redo = [await one.agent.handle(m.key, m.value, m.position) for m in messages[:50]]
    assert await batch.handle_batch(messages[:50]) == redo
    assert set(redo) <= {"duplicate", "rejected", "flushed"}
    again = _snapshot(many)
    assert again == _snapshot(one)
    assert again["memories"] == a["memories"] and again["letters"] == a["letters"]


def _failing_on(h: Harness, event_id: str) -> None:
    """The processor raises on one event, every time (a poison the decoder cannot see)."""
    failing_blocks(h, lambda entry: RuntimeError("segmenter exploded")
                   if isinstance(entry, Event) and entry.event_id == event_id else None)


async def test_a_failing_batch_is_redone_one_message_at_a_time(
        pair: tuple[Harness, Harness]) -> None:
    one, many = pair
    stream = _stream(1)
    bad = orjson.loads(stream[5][1])["event_id"]
    for h in pair:
        _failing_on(h, bad)
    messages = _messages(stream)
    singly = [await one.agent.handle(m.key, m.value, m.position) for m in messages]
    batch = BatchIngest(many.agent)
    batched: list[str] = []
    for i in range(0, len(messages), 20):
        batched += await batch.handle_batch(messages[i:i + 20])
    assert batch.fallbacks == 1 and batched == singly
    assert singly[5] == "dead_lettered" and singly.count("dead_lettered") == 1
    a, b = _snapshot(one), _snapshot(many)
    assert b == a and a["memories"]
    (position, reason), = b["letters"]
    assert position == "t-agent-events/0/5" and "segmenter exploded" in reason


async def test_the_faust_app_consumes_in_batches(pair: tuple[Harness, Harness]) -> None:
    """``create_app`` in batch mode through Faust's test context (no broker)."""
    from breadcrumb.streams.kafka.app import create_app

    h = pair[1]
    settings = h.parts.settings.with_overrides(mode="cluster", topic_prefix="tb-",
                                               derive_batch_entries=16, derive_batch_max_ms=50)
    app = create_app(settings, h.parts, web=False)
    app.finalize()
    stream = _stream(1)[:30]
    async with app.breadcrumb_agent.test_context() as agent:  # type: ignore[attr-defined]
        for key, value in stream:
            await agent.put(value, key=key.encode())
        await agent.put(b"{oops", key=b"demo/x")
        batch = app.breadcrumb_batch  # type: ignore[attr-defined]
        first = stream[0][0]
        count = sum(1 for k, _v in stream if k == first)

        def done() -> bool:  # (test context: sends to the other topics never complete)
            state = h.store.states.get_state(first)
            return bool(h.store.dead_letters.count_dead_letters() and state
                        and state["next_index"] == count)
        for _ in range(600):  # handling runs in the executor, after the take's wait
            if done():
                break
            await asyncio.sleep(0.1)
        assert done()
        assert batch.batches >= 1 and batch.fallbacks == 0  # 16 + 15: two batches
    await app.producer.stop()  # the sends started it (no broker): stop its Kafka client
    assert h.store.events.count_events() == len(stream)
    (position, reason, payload), = h.store.dead_letters.dead_letter_positions()
    assert position == "tb-agent-events/0/30" and "not JSON" in reason and payload == "{oops"


async def test_each_batch_logs_one_line_with_size_time_and_lag(
        pair: tuple[Harness, Harness], caplog: pytest.LogCaptureFixture) -> None:
    """Issue 30: a worker busy for a minute says so, batch by batch."""
    h = pair[1]
    messages = _messages(_stream(1))[:12]
    caplog.set_level("INFO", logger="breadcrumb.streams.kafka.batch")
    await BatchIngest(h.agent).handle_batch(messages, lag=lambda: 7)
    lines = [r.getMessage() for r in caplog.records
             if r.name == "breadcrumb.streams.kafka.batch"]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"batch of 12 messages from {messages[0].position}: ")
    assert " ms, " in lines[0] and "processed" in lines[0] and lines[0].endswith(", lag 7")

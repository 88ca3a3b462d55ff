"""The cluster ingest agent without a broker: direct method calls, the embedded SQL store
(same SqlStore code as MySQL), qdrant-client local mode and a list for the topics."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pymysql
import pytest
from qdrant_client import QdrantClient

from breadcrumb.infra.cluster import WorkerParts
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.stores.vectors.server.index import QdrantServerIndex
from breadcrumb.streams.failure_policy import FailurePolicy
from breadcrumb.streams.kafka import agent as fa
from breadcrumb.streams.service import IngestBlock, IngestService
from breadcrumb.streams.tracking import IdleTracker
from breadcrumb.topics.records import DeadLetter
from tests.conftest import example_events

NOW = "2026-11-30T00:00:00+00:00"


class ListSink:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes | None]] = []

    async def send(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        self.sent.append((topic, key, value))

    def values(self, topic: str) -> list[Any]:
        return [orjson.loads(v) for t, _k, v in self.sent if t == topic and v is not None]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Harness:
    def __init__(self, tmp_path: Path) -> None:
        settings = Settings(data_dir=tmp_path, idle_flush_seconds=30)
        store = SqliteStore(tmp_path / "s.sqlite3")
        store.open()
        embedder = HashEmbedder(dim=32)
        index = QdrantServerIndex(lambda: QdrantClient(path=str(tmp_path / "q")), "t_", 32)
        index.ensure()
        self.parts = WorkerParts(settings, store, index, embedder, lambda: NOW)
        self.sink = ListSink()
        self.clock = Clock()
        self.sleeps: list[float] = []
        self.owned: set[str] | None = None  # None: every key is this worker's
        self.agent = self.new_agent()

    def new_agent(self) -> fa.IngestAgent:
        """An agent as a (re)started worker process builds it on the same stores."""
        return fa.IngestAgent(self.parts, self.sink, IdleTracker(30, self.clock),
                              FailurePolicy(max_attempts=3), sleep=self._sleep,
                              owns=lambda key: self.owned is None or key in self.owned)

    async def _sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    async def send(self, key: str | None, value: Any, offset: int) -> str:
        raw = value if isinstance(value, bytes | None) else orjson.dumps(value)
        return await self.agent.handle(None if key is None else key.encode(), raw,
                                       f"t-agent-events/0/{offset}")

    @property
    def store(self) -> SqliteStore:
        return self.parts.store  # type: ignore[no-any-return]

    def close(self) -> None:
        self.parts.close()


@pytest.fixture()
def h(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(tmp_path)
    yield harness
    harness.close()


def _key(event: dict[str, Any]) -> str:
    return f"{event['user_id']}/{event['thread_id']}"


async def test_events_become_memories_published_once(h: Harness) -> None:
    events = example_events()
    outcomes = [await h.send(_key(e), e, n) for n, e in enumerate(events)]
    assert outcomes.count("processed") == len(events)
    assert h.store.events.count_events() == len(events)
    memories = h.store.memories.list_memories("demo", 100, 0)
    assert memories and len(h.sink.values(fa.OBSERVATIONS)) == len(memories)
    assert {o["id"] for o in h.sink.values(fa.OBSERVATIONS)} == {m.id for m in memories}
    counters = h.store.counters.get_counters()
    assert counters["events_processed"] == len(events)

    # a redelivery (after a crash before the commit of the offset) changes nothing
    again = [await h.send(_key(e), e, n) for n, e in enumerate(events[:5])]
    assert again == ["duplicate"] * 5
    assert h.store.events.count_events() == len(events)
    assert h.store.counters.get_counters()["events_processed"] == len(events)
    assert h.store.counters.get_counters()["redeliveries"] == 5


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("demo/t", b"{oops", "value is not JSON"),
    ("demo/t", None, "tombstone"),
    ("demo/t", {"_control": "flush", "thread_id": "t", "ts": NOW}, "flush marker without"),
    ("demo/other", {**example_events()[0], "thread_id": "t"}, "under key 'demo/other'"),
    ("demo/t", {**example_events()[0], "thread_id": "t", "kind": "telepathy"}, "'kind'"),
])
async def test_poison_goes_to_the_dead_letter_table_and_topic_with_its_position(
        h: Harness, key: str, value: Any, reason: str) -> None:
    assert await h.send(key, value, 7) == "rejected"
    rows = h.store.dead_letters.dead_letter_positions()
    assert len(rows) == 1 and rows[0][0] == "t-agent-events/0/7" and reason in rows[0][1]
    on_topic = h.sink.values(fa.DEAD_LETTERS)
    assert len(on_topic) == 1 and on_topic[0]["position"] == "t-agent-events/0/7"
    assert reason in on_topic[0]["reason"]
    # redelivered: the table keeps one letter per position
    await h.send(key, value, 7)
    assert h.store.dead_letters.count_dead_letters() == 1
    assert h.store.states.count_pending_window_events() == 0
    assert h.store.states.list_states(False) == []


def failing_blocks(h: Harness, error: Callable[[Any], BaseException | None]) -> None:
    """Each block of work of the worker's services raises ``error(entry)`` (when not None)
    where it would handle ``entry`` (a decoded event or flush marker)."""
    real = h.parts.service_for

    def service_for(states: Any, letters: Any, **batch: Any) -> IngestService:
        service = real(states, letters, **batch)
        opened = service.batched

        @contextmanager
        def batched(context: Any = None) -> Iterator[IngestBlock]:
            with opened(context) as block:
                handle = block.handle

                def flaky(entry: Any, raw_text: str | None = None) -> Any:
                    failure = error(entry)
                    if failure is not None:
                        raise failure
                    return handle(entry, raw_text)
                block.handle = flaky  # type: ignore[method-assign]
                yield block
        service.batched = batched  # type: ignore[method-assign]
        return service
    h.parts.service_for = service_for  # type: ignore[method-assign]


def _failing_service(h: Harness, errors: list[BaseException]) -> None:
    failing_blocks(h, lambda _entry: errors.pop(0) if errors else None)


async def test_a_store_outage_is_retried_until_it_is_back(h: Harness) -> None:
    event = example_events()[0]
    down = [pymysql.err.OperationalError(2003, "Can't connect to MySQL server")] * 6
    _failing_service(h, list(down))
    assert await h.send(_key(event), event, 0) == "processed"
    assert h.store.events.count_events() == 1 and h.store.dead_letters.count_dead_letters() == 0
    assert h.sleeps == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0]  # doubling, capped
    assert h.store.counters.get_counters()["retries"] == 6


async def test_a_message_that_makes_the_processor_raise_is_dead_lettered(h: Harness) -> None:
    events = example_events()[:3]
    _failing_service(h, [RuntimeError("segmenter exploded")] * 3)
    assert await h.send(_key(events[0]), events[0], 0) == "dead_lettered"
    position, reason, payload = h.store.dead_letters.dead_letter_positions()[0]
    assert position == "t-agent-events/0/0" and "segmenter exploded" in reason
    assert "processing failed 3 times" in reason and events[0]["event_id"] in payload
    assert h.sink.values(fa.DEAD_LETTERS)[0]["position"] == position
    counters = h.store.counters.get_counters()
    assert (counters["dead_lettered"], counters["processing_failures"]) == (1, 1)
    # the thread goes on with the next messages
    assert [await h.send(_key(e), e, n) for n, e in enumerate(events[1:], 1)] == [
        "processed", "processed"]


async def test_idle_threads_get_a_flush_marker_that_closes_the_window(h: Harness) -> None:
    events = [e for e in example_events() if e["kind"] != "session_end"][:5]
    for n, e in enumerate(events):
        await h.send(_key(e), e, n)
    assert h.store.states.count_pending_window_events() > 0
    assert await h.agent.flush_idle() == 0
    h.clock.now += 31
    assert await h.agent.flush_idle() == 1
    (topic, key, marker), = [s for s in h.sink.sent if s[0] == fa.EVENTS]
    assert key == _key(events[0]).encode() and orjson.loads(marker or b"")["reason"] == "idle"
    assert await h.send(_key(events[0]), marker, 99) == "flushed"
    assert h.store.states.count_pending_window_events() == 0
    h.clock.now += 60
    assert await h.agent.flush_idle() == 0  # nothing open any more


async def test_an_open_window_found_after_a_restart_is_flushed_too(h: Harness) -> None:
    events = [e for e in example_events() if e["kind"] != "session_end"][:3]
    for n, e in enumerate(events):
        await h.send(_key(e), e, n)
    h.agent = h.new_agent()  # a new process: only the SQL state survived
    assert await h.agent.flush_idle() == 0  # clock starts now
    h.clock.now += 31
    assert await h.agent.flush_idle() == 1


async def test_only_threads_of_assigned_partitions_get_idle_flushes(h: Harness) -> None:
    """Two workers: an open window of a thread whose partition is another worker's is not
    this worker's to close (that thread may be busy over there)."""
    mine, theirs = example_events()[0], {**example_events()[0], "thread_id": "elsewhere",
                                         "event_id": "e-elsewhere"}
    for n, e in enumerate((mine, theirs)):
        await h.send(_key(e), e, n)
    h.owned = {_key(mine)}
    h.agent = h.new_agent()
    await h.agent.flush_idle()
    h.clock.now += 31
    assert await h.agent.flush_idle() == 1
    assert [k for t, k, _v in h.sink.sent if t == fa.EVENTS] == [_key(mine).encode()]
    h.owned = set()  # the partition moved away while the clock ran: no marker either
    await h.send(_key(mine), {**mine, "event_id": "e-again"}, 2)
    h.clock.now += 31
    assert await h.agent.flush_idle() == 0


class _Catalog:
    def __init__(self) -> None:
        self.answers: list[Any] = []

    def current(self) -> str:
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return str(answer)


async def test_alias_following_survives_a_connect_error(h: Harness) -> None:
    catalog = _Catalog()
    catalog.answers = [pymysql.err.OperationalError(2003, "Can't connect"), "g2", "main"]
    h.parts.catalog, h.parts.generation = catalog, "main"
    await h.agent.guarded("follow_alias", h.agent.follow_alias)
    assert h.agent.errors == {"follow_alias": 1} and h.parts.publishing
    await h.agent.guarded("follow_alias", h.agent.follow_alias)
    assert not h.parts.publishing
    event = example_events()[0]
    await h.send(_key(event), {**event, "kind": "telepathy"}, 3)
    assert h.sink.sent == []  # a generation that is not current publishes nothing
    await h.agent.guarded("follow_alias", h.agent.follow_alias)
    assert h.parts.publishing


async def test_the_faust_app_feeds_the_agent(h: Harness) -> None:
    """``create_app`` wiring through Faust's test context (no broker): thread state in
    SQL (the app has no Faust table to recover) and a poison message dead-lettered with
    its Kafka position."""
    from breadcrumb.streams.kafka.app import create_app

    settings = h.parts.settings.with_overrides(mode="cluster", topic_prefix="tc-",
                                               derive_batch_entries=1)  # one at a time
    app = create_app(settings, h.parts, web=False)
    app.finalize()
    events = example_events()[:3]
    async with app.breadcrumb_agent.test_context() as agent:  # type: ignore[attr-defined]
        for e in events:
            await agent.put(orjson.dumps(e), key=_key(e).encode())
        await agent.put(b"{oops", key=b"demo/x")
        for _ in range(300):  # put() returns once delivered; handling runs in the executor
            if h.store.dead_letters.count_dead_letters():
                break
            await asyncio.sleep(0.1)
        assert not app.tables  # nothing to recover after a rebalance
        assert (h.store.states.get_state(_key(events[0])) or {})["next_index"] == 3
    await app.producer.stop()  # the dead letter's send started it (no broker): stop its client
    assert h.store.events.count_events() == 3
    (position, reason, payload), = h.store.dead_letters.dead_letter_positions()
    assert position == "tc-agent-events/0/3" and "not JSON" in reason and payload == "{oops"


async def test_a_restarted_worker_continues_from_the_committed_state(h: Harness) -> None:
    """The state is read inside each message's transaction: a new process (``kill -9``
    between messages) and a transaction rolled back mid-message both leave the next
    event exactly the next index."""
    events = [e for e in example_events() if e["thread_id"] == "auth-refactor"][:4]
    key = _key(events[0])
    for n, event in enumerate(events[:2]):
        await h.send(key, event, n)
    h.agent = h.new_agent()
    _failing_service(h, [RuntimeError("crash inside the transaction")])
    assert await h.send(key, events[2], 2) == "processed"  # retried after the rollback
    assert await h.send(key, events[3], 3) == "processed"
    assert [e.index for e in h.store.events.get_range("demo", "auth-refactor", 0, 99)] \
        == [0, 1, 2, 3]
    assert h.store.dead_letters.count_dead_letters() == 0
    assert (h.store.states.get_state(key) or {})["next_index"] == 4


async def test_direct_publishes_are_received_once_by_position(h: Harness) -> None:
    """SDK messages (no gateway saw them) count as received when first consumed; the same
    position again (a redelivery) counts only as a redelivery; a resend of the event at a
    new position is received and a duplicate, as at the gateway; flush markers and
    gateway messages are not received here."""
    events = [e for e in example_events() if e["kind"] != "session_end"][:3]
    key = _key(events[0])
    for n, e in enumerate(events):
        assert await h.agent.handle(key.encode(), orjson.dumps(e), f"t-agent-events/0/{n}",
                                    direct=True) == "processed"
    for n, e in enumerate(events[:2]):  # redelivered after a crash / rebalance
        await h.agent.handle(key.encode(), orjson.dumps(e), f"t-agent-events/0/{n}",
                             direct=True)
    assert await h.agent.handle(key.encode(), orjson.dumps(events[1]), "t-agent-events/0/3",
                                direct=True) == "duplicate"  # the producer's resend
    await h.agent.handle(key.encode(), b"{oops", "t-agent-events/0/4", direct=True)
    await h.agent.handle(key.encode(), b"{oops", "t-agent-events/0/4", direct=True)
    marker = {"_control": "flush", "user_id": "demo", "thread_id": events[0]["thread_id"],
              "ts": NOW, "reason": "flush"}
    await h.agent.handle(key.encode(), orjson.dumps(marker), "t-agent-events/0/5", direct=True)
    other = {**events[0], "event_id": "via-gateway"}
    await h.agent.handle(key.encode(), orjson.dumps(other), "t-agent-events/0/6")
    counters = h.store.counters.get_counters()
    assert counters["events_received"] == 5  # 3 events, the resend, the poison message
    # issue 30: the poison message is a dead letter, not a processed event
    assert counters["events_processed"] == 4  # 3 + the gateway's event
    assert (counters["redeliveries"], counters["duplicates"], counters["flushes"]) == (3, 1, 1)
    assert h.store.dead_letters.count_dead_letters() == counters["dead_lettered"] == 1


def test_the_direct_header_is_read_from_pairs_or_a_mapping() -> None:
    from breadcrumb.streams.tracking import DIRECT_HEADER, is_direct

    assert is_direct([("x", b"1"), (DIRECT_HEADER, b"1")]) and is_direct({DIRECT_HEADER: b"1"})
    assert not is_direct(None) and not is_direct([]) and not is_direct({"x": b"1"})


async def test_undecodable_bytes_are_kept_whole_and_counted_once(h: Harness) -> None:
    """Issue 30: the letter gives back every byte (base64), in the table and on the topic;
    the poison is counted as a dead letter, not as a processed event."""
    raw = b"\xff\x00 not json \xc3("
    assert await h.send("demo/t", raw, 9) == "rejected"
    letter = h.store.dead_letters.list_dead_letters(1)[0]
    assert letter.original_bytes() == raw and letter.payload.startswith("base64:")
    on_topic = h.sink.values(fa.DEAD_LETTERS)[0]
    assert DeadLetter(**{k: v for k, v in on_topic.items() if k != "position"}
                      ).original_bytes() == raw
    counters = h.store.counters.get_counters()
    assert counters["dead_lettered"] == h.store.dead_letters.count_dead_letters() == 1
    assert counters.get("events_processed", 0) == 0
    assert counters.get("processing_failures", 0) == 0


async def test_a_missing_fields_reason_names_every_field(h: Harness) -> None:
    event = {k: v for k, v in example_events()[0].items()
             if k not in ("event_id", "role", "ts")}
    assert await h.send(_key(event), event, 3) == "rejected"
    (_position, reason, _payload), = h.store.dead_letters.dead_letter_positions()
    assert all(f"'{name}'" in reason for name in ("event_id", "role", "ts")), reason

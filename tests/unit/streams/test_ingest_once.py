"""Issue 48 part 4: ingest does each thing once.

A block of work reads and writes through its own batching wrappers (the service's raw
events and thread states are never swapped for proxies); each log entry is checked
against the contract once, when it becomes an item; an erasure after intake still keeps
its scope out on replay; a rehearsal returns the texts it would embed and writes nothing,
without an exception."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.processors.validate import validate_event
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.ports.tables import Plan, Scope
from breadcrumb.stores.sql.raw_batch import BatchedRawEvents
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.streams import ingest_core
from breadcrumb.streams.embedded.log_unit import log_items, log_unit
from breadcrumb.streams.embedded.replay import Progress, Replayer
from breadcrumb.streams.ingest_core import Item
from breadcrumb.streams.service import BatchContext, IngestService
from breadcrumb.streams.state import WriteBackStates
from breadcrumb.topics.records import Event, FlushMarker
from tests.conftest import example_events

NOW = "2026-11-30T00:00:00+00:00"


class _Index:
    """Counts the vectors written (the real indexes have their own tests)."""

    def __init__(self) -> None:
        self.points = 0

    def upsert_memories(self, observations: Sequence[Any], *_rest: Any) -> None:
        self.points += len(observations)

    def upsert_chunks(self, chunks: Sequence[Any], *_rest: Any) -> None:
        self.points += len(chunks)


class _CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        super().__init__(dim=32)
        self.texts = 0

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += len(texts)
        return list(super().embed_passages(texts))


def _store(tmp_path: Path) -> SqliteStore:
    store = SqliteStore(tmp_path / "s.sqlite3")
    store.open()
    return store


def _service(store: SqliteStore, index: _Index, embedder: HashEmbedder | None = None
             ) -> IngestService:
    return IngestService(store.events, store.memories, store.dead_letters, store.states,
                         index, embedder or HashEmbedder(dim=32), lambda: NOW)  # type: ignore[arg-type]


def _logged(store: SqliteStore, events: list[dict[str, Any]]) -> list[Item]:
    """``events`` and a flush marker per thread, appended to the log (as intake would)
    and read back as ingest items."""
    rows: list[tuple[str | None, str | None, str, str]] = [
        (e["user_id"], e["event_id"], f"{e['user_id']}/{e['thread_id']}", json.dumps(e))
        for e in events]
    for user, thread in sorted({(e["user_id"], e["thread_id"]) for e in events}):
        marker = FlushMarker(user, thread, NOW, "flush").to_dict()
        rows.append((None, None, f"{user}/{thread}", json.dumps(marker)))
    store.log.append_log(rows)
    return log_items(store.log.read_log_all(0, 10_000))


def test_a_block_batches_through_its_own_wrappers_never_swapping_the_services(
        tmp_path: Path) -> None:
    store = _store(tmp_path)
    service = _service(store, _Index())
    raw, states = service.raw, service.states
    events = example_events()[:6]
    ctx = BatchContext(events=[(e["user_id"], e["event_id"]) for e in events])
    with store.transaction(), service.batched(ctx) as block:
        for e in events:
            block.handle(Event.from_dict(e))
        assert service.raw is raw and service.states is states  # no proxy swapped in
        assert isinstance(block.raw, BatchedRawEvents)
        assert isinstance(block.states, WriteBackStates)
    assert service.raw is raw and service.states is states
    assert store.events.count_events() == 6  # the block's buffer written at its end
    assert {key for key, _ in store.states.list_states(pending_only=False)} == {
        f"{events[0]['user_id']}/{events[0]['thread_id']}"}


def test_each_log_entry_is_checked_against_the_contract_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []

    def counted(data: Any, *args: Any) -> Any:
        calls.append(data)
        return validate_event(data, *args)

    monkeypatch.setattr(ingest_core, "validate_event", counted)
    store = _store(tmp_path)
    events = example_events()
    items = _logged(store, events)
    assert len(calls) == len(events)  # decoded as items: once each, markers not at all
    result = log_unit(store, _service(store, _Index())).apply(items)
    assert len(calls) == len(events)  # applying them checks nothing again
    assert result.outcomes.count("processed") == len(events)


def test_an_event_of_a_thread_erased_after_intake_is_skipped_on_replay(
        tmp_path: Path) -> None:
    store = _store(tmp_path)
    events = example_events()
    gone, kept = "auth-refactor", "deploy-pipeline"
    _logged(store, events)  # accepted before the erasure
    store.tombstones.write(Plan(Scope("thread", "demo", gone)), "2099-01-01T00:00:00Z", "test")
    index = _Index()
    replay = Replayer(store.log, store, _service(store, index), Progress("g1"))
    replay.catch_up()
    stored = {e.thread_id for e in store.events.iter_all_events()}
    assert stored == {kept}
    assert {key for key, _ in store.states.list_states(pending_only=False)} == {f"demo/{kept}"}
    memories = store.memories.list_memories("demo")
    assert memories and {m.source_range.thread_id for m in memories} == {kept}


def test_a_rehearsal_returns_its_texts_and_writes_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path)
    index, embedder = _Index(), _CountingEmbedder()
    service = _service(store, index, embedder)
    items = _logged(store, example_events())
    unit = log_unit(store, service)
    counters = dict(store.counters.get_counters())
    taken, texts = unit.rehearse(items)
    assert taken == len(items) and texts  # every entry; the flushes closed ranges
    assert (index.points, embedder.texts) == (0, 0)  # nothing embedded or indexed
    assert store.events.count_events() == 0
    assert store.states.list_states(pending_only=False) == []
    assert store.memories.list_memories("demo") == []
    assert dict(store.counters.get_counters()) == counters  # no cursor, no counts
    prepared = service.prepare(texts)  # outside the store lock, in the runner
    embedded = embedder.texts
    result = unit.apply(items, prepared=prepared)
    assert embedder.texts == embedded  # the real pass takes the rehearsal's vectors
    assert index.points > 0 and result.observations
    assert store.events.count_events() == len(example_events())


def test_a_transaction_that_keeps_nothing_rolls_back_at_its_end_without_raising(
        tmp_path: Path) -> None:
    store = _store(tmp_path)
    with store.transaction(keep=False):
        store.counters.incr("rehearsed", 1)
        store.log.append_log([("demo", "e1", "demo/t", '{"event_id": "e1"}')])
        assert store.counters.get_counters().get("rehearsed") == 1  # seen inside it
    assert "rehearsed" not in store.counters.get_counters()
    assert store.log.count_log_after(0) == 0
    with store.transaction(), pytest.raises(RuntimeError, match="outermost"):
        with store.transaction(keep=False):
            pass

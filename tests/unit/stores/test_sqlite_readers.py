"""Reads beside the writer (stores/sql/sqlite/readers.py): a thread outside the store's open
transaction is answered without waiting for it, from the committed state only; the
writing thread still sees its own uncommitted rows."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from breadcrumb.stores.sql.core import StoreClosedError
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.topics.records import Event, Observation, SourceRange

WAIT = 10.0  # seconds a blocked call would wait at least (the writer holds its lock longer)


def event(i: int) -> Event:
    return Event(event_id=f"e{i}", user_id="alice", thread_id="t1",
                 ts=f"2026-01-01T00:00:0{i}Z", role="user", kind="message",
                 content=f"line {i}", index=i, tokens=2)


def memory(mid: str, summary: str) -> Observation:
    return Observation(id=mid, user_id="alice", project_id="p", summary=summary,
                       source_range=SourceRange("t1", 0, 1), tags=(), query_hints=(),
                       retrieve_when="", importance=0.5, created_at="2026-01-01T00:00:00Z")


class Writer:
    """A thread that opens a transaction, runs ``body`` in it and holds it open."""

    def __init__(self, store: SqliteStore, body: Callable[[], None]) -> None:
        self.inside, self.release = threading.Event(), threading.Event()
        self.own_view: list[Any] = []

        def run() -> None:
            with store.transaction():
                body()
                self.own_view.append(store.events.get_range("alice", "t1", 0, 2))
                self.inside.set()
                self.release.wait(WAIT * 3)

        self.thread = threading.Thread(target=run)

    def __enter__(self) -> Writer:
        self.thread.start()
        assert self.inside.wait(WAIT)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.thread.join(WAIT)


def in_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` on another thread; fails the test if it is still blocked after WAIT s."""
    out: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # re-raised on the test's thread
            failed.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(WAIT)
    assert not worker.is_alive(), "the read waited for the writer's transaction"
    if failed:
        raise failed[0]
    return out[0]


def test_a_read_outside_the_transaction_neither_waits_nor_sees_it(store: SqliteStore) -> None:
    store.events.put_events([event(0), event(1)])
    store.memories.upsert_memory(memory("m1", "committed summary"))
    store.states.put_state("alice/t1", {"pending": ["a"], "n": 1})

    def body() -> None:
        store.events.put_event(event(2))
        store.memories.upsert_memory(memory("m1", "uncommitted summary"))
        store.memories.upsert_memory(memory("m2", "uncommitted memory"))
        store.states.put_state("alice/t1", {"pending": ["a", "b"], "n": 2})

    with Writer(store, body) as writer:
        assert [e.event_id for e in writer.own_view[0]] == ["e0", "e1", "e2"]  # its own rows
        ranged = in_thread(lambda: store.events.get_range("alice", "t1", 0, 2))
        assert [e.event_id for e in ranged] == ["e0", "e1"]
        found = in_thread(lambda: store.memories.get_memories("alice", ["m1", "m2"]))
        assert [(m.id, m.summary) for m in found] == [("m1", "committed summary")]
        assert in_thread(lambda: store.states.get_state("alice/t1")) == {"pending": ["a"], "n": 1}
        states = in_thread(lambda: store.states.get_states(["alice/t1"]))
        assert states == {"alice/t1": {"pending": ["a"], "n": 1}}
    # committed now: every reader sees it
    assert [e.event_id for e in store.events.get_range("alice", "t1", 0, 2)] == ["e0", "e1", "e2"]
    seen = in_thread(lambda: store.memories.get_memories("alice", ["m1", "m2"]))
    assert [m.summary for m in seen] == ["uncommitted summary", "uncommitted memory"]
    assert in_thread(lambda: store.states.get_state("alice/t1")) == {"pending": ["a", "b"], "n": 2}


def test_a_rolled_back_transaction_was_never_visible(store: SqliteStore) -> None:
    store.events.put_events([event(0)])

    class Stop(Exception):
        pass

    with pytest.raises(Stop), store.transaction():
        store.events.put_event(event(1))
        ids = [e.event_id for e in in_thread(lambda: store.events.get_range("alice", "t1", 0, 1))]
        assert ids == ["e0"]
        raise Stop
    assert [e.event_id for e in in_thread(lambda: store.events.get_range("alice", "t1", 0, 1))] \
        == ["e0"]


def test_reads_after_close_raise_and_a_reopen_reads_again(store: SqliteStore) -> None:
    store.memories.upsert_memory(memory("m1", "kept"))
    assert [m.id for m in in_thread(lambda: store.memories.get_memories("alice", ["m1"]))] == ["m1"]
    store.close()
    with pytest.raises(StoreClosedError):
        in_thread(lambda: store.memories.get_memories("alice", ["m1"]))
    store.open()
    assert [m.id for m in in_thread(lambda: store.memories.get_memories("alice", ["m1"]))] == ["m1"]


def test_readers_are_read_only_connections(store: SqliteStore) -> None:
    conn = store.db.readers._take()
    try:
        with pytest.raises(Exception, match="readonly"):
            conn.execute("DELETE FROM raw_events")
    finally:
        store.db.readers._give(conn)

"""Memories kept between writes (stores/sql/sqlite/memories.py): a second read of the same
memories costs no SQL, any write (committed, or a statement of an open transaction)
makes the next read go to SQL, and a memory is only ever served to its own user."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from typing import Any

from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.topics.records import MemoryStatusChange
from tests.unit.stores.test_sqlite_readers import memory


def counted_reads(store: SqliteStore) -> list[int]:
    """How many ids each SQL read of memory rows asked for (patched on ``store``)."""
    calls: list[int] = []
    real = store.memories._memory_rows

    def rows(user_id: str, ids: Sequence[str]) -> Any:
        calls.append(len(ids))
        return real(user_id, ids)

    store.memories._memory_rows = rows  # type: ignore[method-assign,assignment]
    return calls


def test_a_second_read_is_served_without_sql_until_a_write(store: SqliteStore) -> None:
    store.memories.upsert_memory(memory("m1", "first summary"))
    store.memories.upsert_memory(memory("m2", "second"))
    calls = counted_reads(store)
    assert [m.summary for m in store.memories.get_memories("alice", ["m1", "m2"])] == [
        "first summary", "second"]
    assert [m.id for m in store.memories.get_memories("alice", ["m2", "m1", "m2", "nope"])] == [
        "m2", "m1"]
    assert calls == [2, 1]  # the second read asked SQL only for the id it never found
    store.memories.upsert_memory(memory("m1", "changed"))  # a commit
    assert store.memories.get_memories("alice", ["m1"])[0].summary == "changed"
    assert store.memories.get_memories("alice", ["m2"])[0].status == "active"
    assert store.memories.apply_status_change(MemoryStatusChange(
        "m2", "alice", "archived", "provisional", "2026-01-02T00:00:00Z", "test", "ttl"))
    assert store.memories.get_memories("alice", ["m2"])[0].status == "archived"
    assert calls[-3:] == [1, 1, 1]  # every read after a write went to SQL


def test_a_memory_is_served_to_its_own_user_only(store: SqliteStore) -> None:
    store.memories.upsert_memory(memory("m1", "alice's"))
    assert [m.id for m in store.memories.get_memories("alice", ["m1"])] == ["m1"]  # now kept
    assert store.memories.get_memories("bob", ["m1"]) == []
    assert store.memories.get_memory("bob", "m1") is None


def test_a_statement_outside_a_transaction_also_moves_the_token(store: SqliteStore) -> None:
    store.memories.upsert_memory(memory("m1", "before"))
    assert store.memories.get_memories("alice", ["m1"])[0].summary == "before"
    with store.db.lock:  # an autocommit statement of the write connection
        store.db._conn.execute("UPDATE agent_memories SET summary = 'after' WHERE id = 'm1'")
    assert store.memories.get_memories("alice", ["m1"])[0].summary == "after"


def test_reads_during_an_open_transaction_then_after_its_commit(store: SqliteStore) -> None:
    store.memories.upsert_memory(memory("m1", "committed"))
    inside, release, done = threading.Event(), threading.Event(), threading.Event()
    own: list[str] = []

    def writer() -> None:
        with store.transaction():
            store.memories.upsert_memory(dataclasses.replace(memory("m1", "uncommitted")))
            own.append(store.memories.get_memories("alice", ["m1"])[0].summary)  # its own view
            inside.set()
            release.wait(10)
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    assert inside.wait(10)
    try:  # another thread: the committed state, read twice (the second may be kept)
        assert store.memories.get_memories("alice", ["m1"])[0].summary == "committed"
        assert store.memories.get_memories("alice", ["m1"])[0].summary == "committed"
    finally:
        release.set()
    assert done.wait(10)
    thread.join(10)
    assert own == ["uncommitted"]
    assert store.memories.get_memories("alice", ["m1"])[0].summary == "uncommitted"  # never stale


def test_usage_counters_keep_the_memories_other_changes_do_not(store: SqliteStore) -> None:
    store.memories.upsert_memory(memory("m1", "kept"))
    store.memories.upsert_memory(memory("m2", "other"))
    store.memories.get_memories("alice", ["m1", "m2"])
    calls = counted_reads(store)
    store.memories.record_usage("alice", ["m1", "m2"], "2026-01-03T00:00:00Z")  # a recall's use
    assert [m.summary for m in store.memories.get_memories("alice", ["m1", "m2"])] \
        == ["kept", "other"]
    assert calls == []  # usage counters are not part of a memory: nothing re-read
    assert (store.memories.get_memory_row("alice", "m1") or {})["hit_count"] == 1  # rows: from SQL
    with store.transaction():  # usage and a real change in one transaction
        store.memories.record_usage("alice", ["m1"], "2026-01-04T00:00:00Z")
        store.memories.upsert_memory(memory("m2", "changed"))
    assert [m.summary for m in store.memories.get_memories("alice", ["m1", "m2"])] \
        == ["kept", "changed"]
    assert calls == [1, 2]  # the row read, then both memories (one commit changed m2)


def test_events_are_kept_per_user_and_refreshed_after_a_write(store: SqliteStore) -> None:
    from tests.unit.stores.test_sqlite_readers import event

    mine, theirs = event(1), dataclasses.replace(event(1), user_id="bob", content="bob's")
    store.events.put_event(mine)
    store.events.put_event(theirs)  # the same event id, another user
    assert store.events.get_events("alice", ["e1"])["e1"].content == "line 1"
    assert store.events.get_events("bob", ["e1", "e9"]) == {"e1": theirs}
    reads: list[int] = []
    real = store.db.read

    def counted(sql: str, params: Any = ()) -> Any:
        reads.append(1)
        return real(sql, params)

    store.db.read = counted  # type: ignore[method-assign]
    assert store.events.get_events("alice", ["e1"]) == {"e1": mine}
    assert store.events.get_events("bob", ["e1"]) == {"e1": theirs}
    assert reads == []  # both kept, each for its own user
    store.events.put_event(event(2))  # a write (it looks up the log, issue 49): read again
    reads.clear()
    assert store.events.get_events("alice", ["e1", "e2"]) == {"e1": mine, "e2": event(2)}
    assert reads == [1]

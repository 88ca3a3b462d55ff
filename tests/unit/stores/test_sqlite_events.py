"""SqliteStore's inserted raw events served to range reads (stores/sql/sqlite/events.py): the
same events a SQL read returns, never one the table no longer holds."""

from __future__ import annotations

import pytest

from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.topics.records import Event


def event(i: int, thread: str = "t1") -> Event:
    return Event(event_id=f"{thread}-e{i}", user_id="alice", thread_id=thread,
                 ts=f"2026-01-01T00:00:0{i}Z", role="user", kind="message",
                 content=f"line {i} 認証", index=i, attrs={"n": [i, {"k": "v"}]}, tokens=3)


def from_sql(store: SqliteStore, start: int, end: int) -> list[Event]:
    fresh = SqliteStore(store.path)  # another connection: no cache
    with fresh:
        return fresh.events.get_range("alice", "t1", start, end)


def test_a_range_written_over_several_transactions_reads_as_sql_does(store: SqliteStore) -> None:
    store.events.put_events([event(0), event(1)])
    with store.transaction():
        store.events.put_event(event(2))
        assert store.events.get_range("alice", "t1", 0, 2) == [event(0), event(1), event(2)]
    store.events.put_events([event(0, "t2")])
    assert store.events.get_range("alice", "t1", 0, 2) == from_sql(store, 0, 2)
    assert store.events.get_range("alice", "t1", 1, 5) == from_sql(store, 1, 5)  # incomplete: SQL
    assert store.events.get_range("alice", "t1", 2, 1) == []


def test_events_put_outside_a_transaction_are_held_once_committed(store: SqliteStore) -> None:
    store.events.put_events([event(0), event(1)])  # its own transaction, committed on return
    store.events.put_event(event(2))
    assert store.events.held.staged == {}  # nothing waits for a later commit
    assert sorted(store.events.held.held["alice", "t1"]) == [0, 1, 2]


def test_a_rollback_forgets_its_events(store: SqliteStore) -> None:
    store.events.put_events([event(0)])
    with pytest.raises(RuntimeError), store.transaction():
        store.events.put_events([event(1)])
        raise RuntimeError("batch failed")
    assert store.events.get_range("alice", "t1", 0, 1) == [event(0)] == from_sql(store, 0, 1)


def test_a_delete_of_raw_events_empties_the_cache(store: SqliteStore) -> None:
    store.events.put_events([event(0), event(1)])
    with store.transaction():  # what the archive does for an archived range
        store.db.execute("DELETE FROM raw_events WHERE user_id = ? AND thread_id = ? "
                         "AND idx >= ? AND idx <= ?", ("alice", "t1", 0, 1))
    assert store.events.get_range("alice", "t1", 0, 1) == [] == from_sql(store, 0, 1)


def test_a_duplicate_put_event_is_not_held_twice(store: SqliteStore) -> None:
    assert store.events.put_event(event(0)) is True
    assert store.events.put_event(event(0)) is False
    assert store.events.get_range("alice", "t1", 0, 0) == [event(0)]
    store.close()
    store.open()
    assert store.events.get_range("alice", "t1", 0, 0) == [event(0)]  # from SQL after a reopen


def test_the_cache_is_bounded_by_the_size_of_what_it_holds(store: SqliteStore,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    from breadcrumb.stores.sql.sqlite import events as sqlite_events

    monkeypatch.setattr(sqlite_events, "EVENT_CACHE_BYTES", 3 * 1000 + 3 * 400)
    big = [Event(**{**event(i).to_dict(), "content": "x" * 1000}) for i in range(5)]
    with store.transaction():
        store.events.put_events(big[:3])
    held = store.events.held
    assert held.bytes == 3 * 1400 and held.count == 3
    with store.transaction():  # over the bound: the cache starts again from this batch
        store.events.put_events(big[3:])
    assert held.count == 2 and held.bytes == 2 * 1400
    assert store.events.get_range("alice", "t1", 0, 4) == big == from_sql(store, 0, 4)  # SQL


def test_every_connection_maps_the_file_and_keeps_a_small_cache(store: SqliteStore) -> None:
    from breadcrumb.stores.sql.sqlite import database as sqlite_store

    store.events.put_events([event(0)])
    writer = store.db._conn
    assert writer is not None
    assert writer.execute("PRAGMA mmap_size").fetchone()[0] == sqlite_store.MMAP_BYTES
    assert writer.execute("PRAGMA cache_size").fetchone()[0] == -sqlite_store.WRITER_CACHE_KB
    reader = store.db.connect_reader()
    try:
        assert reader.execute("PRAGMA mmap_size").fetchone()[0] == sqlite_store.MMAP_BYTES
        assert reader.execute("PRAGMA cache_size").fetchone()[0] == -sqlite_store.PAGE_CACHE_KB
    finally:
        reader.close()

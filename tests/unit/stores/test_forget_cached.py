"""``forget_cached`` (ports.ForgetsCached, issue 26): after an erasure nothing a store or
the archive reader keeps in memory is answered any more; the next read goes to SQL / the
cold store."""

from __future__ import annotations

import sqlite3

import pytest

from breadcrumb.stores.cold.archive import ArchiveAwareRawEvents, ArchiveError
from breadcrumb.stores.cold.storage import pack_events
from breadcrumb.stores.ports import ForgetsCached
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from tests.unit.stores.test_sqlite_events import event
from tests.unit.stores.test_sqlite_readers import memory


def _erase_behind(store: SqliteStore) -> None:
    """What the store's caches cannot see: rows deleted by another connection."""
    with sqlite3.connect(store.path) as conn:
        for table in ("agent_memories", "raw_events", "thread_state"):
            conn.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names


def test_the_sqlite_store_drops_kept_memories_events_and_states(store: SqliteStore) -> None:
    assert isinstance(store, ForgetsCached)
    store.memories.upsert_memory(memory("m1", "secret"))
    store.events.put_events([event(0), event(1)])
    store.states.put_state("alice/t1", {"next_index": 2})
    assert store.memories.get_memories("alice", ["m1"])[0].summary == "secret"  # now kept
    assert len(store.events.get_range("alice", "t1", 0, 1)) == 2
    _erase_behind(store)
    # the caches still answer (what forget must not leave behind) ...
    assert [m.id for m in store.memories.get_memories("alice", ["m1"])] == ["m1"]
    assert store.states.get_state("alice/t1") == {"next_index": 2}
    store.forget_cached()
    # ... until they are dropped: every read goes to SQL
    assert store.memories.get_memories("alice", ["m1"]) == []
    assert store.events.get_range("alice", "t1", 0, 1) == []
    assert store.states.get_state("alice/t1") is None


class _Tables:
    def archived_overlapping(self, user_id: str, thread_id: str | None, start: int,
                             end: int) -> list[tuple[str, int, int, str]]:
        return [("t1", 0, 1, "archive/alice/t1/0-1.jsonl.gz")]


class _Cold:
    def __init__(self) -> None:
        self.objects = {"archive/alice/t1/0-1.jsonl.gz": pack_events([event(0), event(1)])}

    def get_object(self, key: str) -> bytes | None:
        return self.objects.get(key)


def test_the_archive_reader_drops_its_decoded_objects(store: SqliteStore) -> None:
    cold = _Cold()
    raw = ArchiveAwareRawEvents(store.events, _Tables(), cold)  # type: ignore[arg-type]
    assert isinstance(raw, ForgetsCached)
    assert len(raw.get_range("alice", "t1", 0, 1)) == 2
    cold.objects.clear()  # the cold copy is erased
    assert len(raw.get_range("alice", "t1", 0, 1)) == 2  # still decoded in memory
    assert raw.cold_reads == 1
    raw.forget_cached()
    with pytest.raises(ArchiveError, match="missing from the cold store"):
        raw.get_range("alice", "t1", 0, 1)  # read from the cold store again, not memory

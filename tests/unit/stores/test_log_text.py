"""Issue 49: an event's text stored once, in the embedded log (``stores.sql.log_text``).

A raw event whose log entry (same user, same event id, same file) holds its content is
stored as a view into that entry and read back identical by every read (by id, many ids,
range, full scan, chunk texts, the explorer's titles), tricky texts included; an event
without such an entry (none, another content, a payload that is not JSON) keeps its
content; tenants read their own; an erasure leaves no view behind and a view whose entry is
gone reads as missing; an archive and its restore read the same events; an old data dir
(schema 3, contents in ``raw_events``) is converted on open and reads the same events back.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from breadcrumb.processors.chunker import ChunkerConfig, chunk_events
from breadcrumb.stores.cold.archive import Archiver
from breadcrumb.stores.cold.storage import LocalColdStore
from breadcrumb.stores.sql.core import id_text
from breadcrumb.stores.sql.forget.erasure import Scope
from breadcrumb.stores.sql.lifecycle import LifecycleTables
from breadcrumb.stores.sql.log_text import VIEW
from breadcrumb.stores.sql.migrate import SCHEMA_VERSION, stored_version
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.topics.records import Event, SourceRange
from tests.unit.stores.test_sqlite_store import TRICKY_CONTENT, ev, obs

CFG = ChunkerConfig(max_tokens=4)
CONTENTS = [*TRICKY_CONTENT, "nul \x00 inside", "escaped \u2028 \u2029 </script>"]


def words(text: str) -> int:
    return len(text.split()) + 1


def logged(store: SqliteStore, events: list[Event], ascii_only: bool = False) -> None:
    """Append the events' payloads to the log as intake does (the client's JSON)."""
    def raw(e: Event) -> str:
        data = {k: v for k, v in e.to_dict().items() if k not in ("index", "tokens")}
        return orjson.dumps(data).decode() if not ascii_only else \
            __import__("json").dumps(data, ensure_ascii=True)
    store.log.append_log([(e.user_id, e.event_id, e.thread_key, raw(e)) for e in events])


def rows(store: SqliteStore) -> dict[tuple[str, str], tuple[str, int | None]]:
    """(user, event) -> (content column, log_seq) as stored."""
    return {(id_text(u), id_text(e)): (str(c), s) for u, e, c, s in store.db.read(
        "SELECT user_id, event_id, content, log_seq FROM raw_events")}


def events_of(user: str, thread: str = "t1") -> list[Event]:
    return [ev(user, thread, i, content=c) for i, c in enumerate(CONTENTS)]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    st = SqliteStore(tmp_path / "store.sqlite3")
    st.open()
    yield st
    st.close()


@pytest.mark.parametrize("ascii_only", [False, True])
def test_logged_events_are_views_read_back_the_same(store: SqliteStore,
                                                    ascii_only: bool) -> None:
    events = events_of("alice")
    logged(store, events, ascii_only)
    store.events.put_events(events[:-1])
    assert store.events.put_event(events[-1])
    stored = [rows(store)[("alice", e.event_id)] for e in events]
    # the text is stored once, the log's; but SQLite's JSON reads a NUL as the string's
    # end: that event's log entry does not read back as its content, so it keeps it
    assert stored[:-2] == [(VIEW, n) for n in range(1, len(events) - 1)]
    assert stored[-2:] == [(CONTENTS[-2], None), (VIEW, len(events))]
    assert store.events.get_range("alice", "t1", 0, len(events)) == events
    assert store.events.get_events("alice", [e.event_id for e in events]) == \
        {e.event_id: e for e in events}
    assert [store.events.get_event("alice", e.event_id) for e in events] == events
    assert list(store.events.iter_all_events(batch=3)) == events
    assert not store.events.put_event(events[0])  # a duplicate: no change
    chunks = chunk_events(events, "m1", CFG, words)
    store.chunks.put_chunks(chunks)
    assert store.chunks.get_chunks("alice", "m1") == chunks  # chunk views read the log


def test_an_event_the_log_does_not_hold_keeps_its_content(store: SqliteStore) -> None:
    same, other, none, broken = (ev("alice", "t1", i, content=f"text {i}") for i in range(4))
    logged(store, [same, replace(other, content="what the client sent")])
    store.log.append_log([("alice", broken.event_id, broken.thread_key, "not json {")])
    store.events.put_events([same, other, none, broken])
    assert rows(store) == {("alice", same.event_id): (VIEW, 1),
                           ("alice", other.event_id): ("text 1", None),
                           ("alice", none.event_id): ("text 2", None),
                           ("alice", broken.event_id): ("text 3", None)}
    assert store.events.get_range("alice", "t1", 0, 3) == [same, other, none, broken]


def test_each_tenant_reads_its_own_event(store: SqliteStore) -> None:
    alice, bob = ev("alice", "t1", 0, "same-id", "alice: 1111"), \
        ev("bob", "t1", 0, "same-id", "bob: 22222")
    logged(store, [alice, bob])
    store.events.put_events([alice, bob])
    assert {c for c, _ in rows(store).values()} == {VIEW}
    assert store.events.get_event("alice", "same-id") == alice
    assert store.events.get_event("bob", "same-id") == bob
    assert store.events.get_range("bob", "t1", 0, 0) == [bob]


def test_an_erasure_leaves_no_view_and_a_dangling_view_reads_as_missing(
        store: SqliteStore) -> None:
    events = events_of("alice")[:3] + events_of("alice", "t2")[:3]
    logged(store, events)
    store.events.put_events(events)
    plan = store.erasure.plan(Scope("thread", "alice", thread_id="t1"))
    assert plan is not None
    store.erasure.erase(plan)
    store.forget_cached()
    assert store.events.get_range("alice", "t1", 0, 9) == []
    assert store.events.get_range("alice", "t2", 0, 9) == events[3:]
    assert store.db.read("SELECT COUNT(*) FROM event_log WHERE thread_key = ?",
                         (events[0].thread_key,)) == [(0,)]
    with store.db.transaction():  # a log entry deleted by hand: its view has no text
        store.db.execute("DELETE FROM event_log WHERE event_id = ?", (events[3].event_id,))
    store.forget_cached()
    assert store.events.get_event("alice", events[3].event_id) is None
    assert store.events.get_range("alice", "t2", 0, 9) == events[4:]
    assert list(store.events.iter_all_events()) == events[4:]


def test_an_archive_and_its_restore_read_the_same_events(store: SqliteStore,
                                                          tmp_path: Path) -> None:
    events = events_of("alice")
    logged(store, events)
    store.events.put_events(events)
    memory = obs("m1", source_range=SourceRange("t1", 0, len(events) - 1))
    store.memories.upsert_memory(memory)
    store.chunks.put_chunks(chunk_events(events, "m1", CFG, words))
    tables = LifecycleTables.on(store.db)
    tables.open()
    archiver = Archiver(store, tables, LocalColdStore(tmp_path / "cold"))
    archiver.archive(memory)
    assert store.events.get_range("alice", "t1", 0, len(events)) == []
    assert store.log.count_log() == len(events)  # the log keeps its entries
    archiver.restore(memory)
    store.forget_cached()
    assert store.events.get_range("alice", "t1", 0, len(events)) == events
    assert [c for c, _ in rows(store).values()].count(VIEW) == len(events) - 1  # views again


def test_an_old_data_dir_is_converted_and_reads_the_same_events(tmp_path: Path) -> None:
    """Schema 3 kept every event's content in ``raw_events``: opening makes views of them."""
    path = tmp_path / "old.sqlite3"
    store = SqliteStore(path)
    store.open()
    events = events_of("alice") + events_of("bob", "t2")
    logged(store, events[:-2])  # the last two were never in this log: they keep their text
    store.events.put_events(events)
    chunks = chunk_events(events, "m1", CFG, words)
    store.chunks.put_chunks(chunks)
    with store.db.transaction():  # the rows as schema 3 wrote them
        store.db.execute_many("UPDATE raw_events SET content = ? WHERE event_id = ?",
                              [(e.content, e.event_id) for e in events])
        store.db.execute("ALTER TABLE raw_events DROP COLUMN log_seq")
        store.db.execute("UPDATE schema_meta SET value = 3 WHERE name = 'version'")
    store.close()
    again = SqliteStore(path)
    again.open()
    try:
        assert stored_version(again.db) == SCHEMA_VERSION == 6
        stored = rows(again)
        keep = {e.event_id for e in events[-2:]}  # and the NUL ones (see above)
        assert [stored[(e.user_id, e.event_id)][0] for e in events] == \
            [e.content if e.event_id in keep or "\x00" in e.content else VIEW
             for e in events]
        assert list(again.events.iter_all_events()) == \
            sorted(events, key=lambda e: (e.user_id, e.thread_id, e.index))
        assert again.chunks.get_chunks("alice", "m1") == \
            [c for c in chunks if c.user_id == "alice"]
    finally:
        again.close()

"""Issue 49: a chunk's text is stored once, in its raw event (``stores.sql.chunk_text``).

Chunks of stored events are written as offsets and read back identical (tricky texts:
multi-byte, emoji, CRLF, control characters, 128 KiB); a chunk that is not its event's
slice keeps its text; tenants read their own events only; an archive keeps another memory's
view into the archived events readable; an old data dir (chunks with their texts,
schema 2) is converted on open and reads the same chunks back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from breadcrumb.processors.chunker import ChunkerConfig, chunk_events
from breadcrumb.stores.cold.archive import Archiver
from breadcrumb.stores.cold.storage import LocalColdStore
from breadcrumb.stores.sql.base import SqlStore
from breadcrumb.stores.sql.chunk_text import VIEW
from breadcrumb.stores.sql.core import id_text
from breadcrumb.stores.sql.lifecycle import LifecycleTables
from breadcrumb.stores.sql.migrate import SCHEMA_VERSION, stored_version
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.topics.records import Chunk, Event, SourceRange
from tests.unit.stores.test_sqlite_store import TRICKY_CONTENT, ev, obs

StoreFactory = Callable[[], SqlStore]
CFG = ChunkerConfig(max_tokens=4)


def words(text: str) -> int:
    return len(text.split()) + 1


def stored(user: str, thread: str = "t1") -> list[Event]:
    """Events of every tricky content (the empty one has no chunk)."""
    return [ev(user, thread, i, content=c) for i, c in enumerate(TRICKY_CONTENT)]


def texts(store: SqlStore) -> dict[str, str]:
    return {id_text(i): str(t) for i, t in store.db.read("SELECT id, text FROM source_chunks")}


class ChunkTextContract:
    """What every SqlStore backend does with chunk texts. Subclasses give ``make_store``."""

    @pytest.fixture
    def store(self, make_store: StoreFactory) -> Iterator[SqlStore]:
        st = make_store()
        st.open()
        yield st
        st.close()

    def test_chunks_of_stored_events_are_offsets_read_back_the_same(
            self, store: SqlStore) -> None:
        events = stored("alice")
        store.events.put_events(events)
        chunks = chunk_events(events, "m1", CFG, words)
        assert len(chunks) > len(events)
        store.chunks.put_chunks(chunks)
        assert set(texts(store).values()) == {VIEW}  # the text is stored once: the event's
        assert store.chunks.get_chunks("alice", "m1") == chunks
        by_id = store.chunks.get_chunks_by_id("alice", [c.id for c in chunks])
        assert [by_id[c.id] for c in chunks] == chunks
        again = store.chunks.get_chunks("alice", "m1")
        assert "".join(c.text for c in again) == "".join(e.content for e in events)

    def test_a_chunk_that_is_not_its_events_slice_keeps_its_text(
            self, store: SqlStore) -> None:
        store.events.put_event(ev("alice", "t1", 0, content="the port is 5432"))
        shifted = Chunk("c1", "m1", "alice", None, "t1", "alice-t1-0", 0, 4, 8, "port", 1)
        wrong = replace(shifted, id="c2", char_start=0, char_end=4)  # "the " there
        orphan = replace(shifted, id="c3", event_id="nowhere")
        store.chunks.put_chunks([shifted, wrong, orphan])
        assert texts(store) == {"c1": VIEW, "c2": "port", "c3": "port"}
        assert store.chunks.get_chunks("alice", "m1") == [wrong, shifted, orphan]

    def test_each_tenant_reads_its_own_event(self, store: SqlStore) -> None:
        alice, bob = ev("alice", "t1", 0, "same-id", "alice: 1111"), \
            ev("bob", "t1", 0, "same-id", "bob: 22222")
        store.events.put_events([alice, bob])
        chunks = chunk_events([alice], "m1", CFG, words) + chunk_events([bob], "m2", CFG, words)
        store.chunks.put_chunks(chunks)
        assert set(texts(store).values()) == {VIEW}
        assert [c.text for c in store.chunks.get_chunks("alice", "m1")] == ["alice: 1111"]
        assert [c.text for c in store.chunks.get_chunks("bob", "m2")] == ["bob: 22222"]
        assert store.chunks.get_chunks("bob", "m1") == []
        assert store.chunks.get_chunks_by_id("bob", [chunks[0].id]) == {}

    def test_an_archive_keeps_other_memories_views_readable(
            self, store: SqlStore, tmp_path: Path) -> None:
        events = stored("alice")
        store.events.put_events(events)
        mine = chunk_events(events, "m1", CFG, words)
        other = chunk_events(events[1:3], "m2", CFG, words)  # the same events, another memory
        store.memories.upsert_memory(obs("m2", source_range=SourceRange("t1", 1, 2)))
        store.chunks.put_chunks(mine + other)
        tables = LifecycleTables.on(store.db)
        tables.open()
        Archiver(store, tables, LocalColdStore(tmp_path / "cold")).archive(
            obs("m1", source_range=replace(obs("m1").source_range, end_index=len(events) - 1)))
        assert store.events.get_range("alice", "t1", 0, len(events)) == []
        assert store.chunks.get_chunks("alice", "m1") == []
        assert store.chunks.get_chunks("alice", "m2") == other
        assert VIEW not in texts(store).values()  # m2's chunks were given their texts


class TestSqliteChunkText(ChunkTextContract):
    @pytest.fixture
    def make_store(self, tmp_path: Path) -> StoreFactory:
        return lambda: SqliteStore(tmp_path / "store.sqlite3")

    def test_an_old_data_dir_is_converted_and_reads_the_same_chunks(
            self, make_store: StoreFactory) -> None:
        """Schema 2 stored every chunk's text: opening converts those rows to offsets."""
        store = make_store()
        store.open()
        events = stored("alice") + stored("bob", "t2")
        store.events.put_events(events)
        chunks = chunk_events(events[:9], "m1", CFG, words) \
            + chunk_events(events[9:], "m2", CFG, words)
        odd = Chunk("odd", "m1", "alice", None, "t1", "gone", 99, 0, 3, "odd", 1)
        with store.db.transaction():  # the rows as schema 2 wrote them
            store.chunks.put_chunks([*chunks, odd])
            store.db.execute_many("UPDATE source_chunks SET text = ? WHERE id = ?",
                                  [(c.text, c.id) for c in chunks])
            store.db.execute("UPDATE schema_meta SET value = 2 WHERE name = 'version'")
        assert VIEW not in texts(store).values()
        store.close()
        again = make_store()
        again.open()
        try:
            assert stored_version(again.db) == SCHEMA_VERSION == 6
            assert texts(again) == {**{c.id: VIEW for c in chunks}, "odd": "odd"}
            assert again.chunks.get_chunks("alice", "m1") == [
                *(c for c in chunks if c.memory_id == "m1"), odd]
            assert again.chunks.get_chunks("bob", "m2") == [c for c in chunks
                                                           if c.memory_id == "m2"]
        finally:
            again.close()

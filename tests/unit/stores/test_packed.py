"""Issue 49: long texts of the embedded store kept compressed (``stores.sql.packed``).

Every text reads back exactly (NULs, emoji, lone surrogates, a text that starts with the
zlib header's byte); short texts and texts that do not shrink stay text; a log entry's
payload is stored compressed on SQLite, read back as the JSON the client sent by every
reader (the log's reads, replay's, the raw events' views into it), and an old entry stored
as text reads as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from breadcrumb.stores.sql import packed
from breadcrumb.stores.sql.log_text import VIEW
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from tests.unit.stores.test_sqlite_store import TRICKY_CONTENT, ev

TEXTS = [*TRICKY_CONTENT, "x" * 500, "xx\x00" * 300, "lone \ud800 surrogate " * 40,
         "short", "🍞" * 200]


@pytest.mark.parametrize("text", TEXTS)
def test_every_text_reads_back_exactly(text: str) -> None:
    stored = packed.pack(text)
    assert packed.unpack(stored) == text
    if isinstance(stored, bytes):
        assert len(stored) < len(text.encode("utf-8"))


def test_short_and_incompressible_texts_stay_text() -> None:
    assert packed.pack("short") == "short"
    noise = bytes(range(256)).hex()[::3] * 1  # little repetition over 170 chars
    assert isinstance(packed.pack("a" * 400), bytes)
    assert packed.unpack(noise.encode()) == noise  # plain UTF-8 bytes (a MySQL driver's)
    assert packed.unpack(b"x marks the spot") == "x marks the spot"  # not a zlib stream


def test_the_sql_function_reads_both_kinds() -> None:
    conn = sqlite3.connect(":memory:")
    packed.register(conn)
    conn.execute("CREATE TABLE t (v TEXT)")
    doc = orjson.dumps({"content": "value 42 " * 50}).decode()
    conn.executemany("INSERT INTO t VALUES (?)", [(packed.pack(doc),), (doc,), (None,)])
    assert [r[0] for r in conn.execute("SELECT typeof(v) FROM t")] == ["blob", "text", "null"]
    got = [r[0] for r in conn.execute("SELECT json_extract(bc_text(v), '$.content') FROM t")]
    assert got == ["value 42 " * 50, "value 42 " * 50, None]


def test_log_payloads_are_compressed_and_every_reader_gets_the_json(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.sqlite3")
    store.open()
    events = [ev("alice", "t1", i, content=f"line {i}: " + "pytest -q tests/ PASSED\n" * 40)
              for i in range(3)]
    payloads = [orjson.dumps({k: v for k, v in e.to_dict().items()
                              if k not in ("index", "tokens")}).decode() for e in events]
    old = ev("alice", "t1", 3, content="an entry written before issue 49 " * 20)
    old_payload = orjson.dumps({k: v for k, v in old.to_dict().items()
                                if k not in ("index", "tokens")}).decode()
    store.log.append_log([(e.user_id, e.event_id, e.thread_key, p)
                          for e, p in zip(events, payloads, strict=True)])
    store.db.execute("INSERT INTO event_log (user_id, event_id, thread_key, payload, "
                     "accepted_at) VALUES (?, ?, ?, ?, '2026-01-01T00:00:00+00:00')",
                     (old.user_id, old.event_id, old.thread_key, old_payload))
    kinds = [r[0] for r in store.db.read("SELECT typeof(payload) FROM event_log ORDER BY seq")]
    assert kinds == ["blob", "blob", "blob", "text"]
    stored = store.db.scalar("SELECT SUM(length(payload)) FROM event_log WHERE seq <= 3")
    assert stored * 3 < sum(len(p) for p in payloads)
    assert store.log.read_log_all(0, 10) == list(enumerate([*payloads, old_payload], 1))
    assert store.log.read_log(0, 10) == store.log.read_log_all(0, 10)
    assert store.log.read_log_entries([2, 4]) == {2: payloads[1], 4: old_payload}
    store.events.put_events([*events, old])
    views = store.db.read("SELECT content FROM raw_events ORDER BY rowid")
    assert [r[0] for r in views] == [VIEW] * 4  # each a view into its (packed) log entry
    assert store.events.get_range("alice", "t1", 0, 3) == [*events, old]
    store.close()


def test_memories_keep_hints_and_metadata_compressed_and_a_forget_reads_them(
        tmp_path: Path) -> None:
    from breadcrumb.stores.sql.forget.erasure import Scope
    from tests.unit.stores.test_sqlite_store import obs

    store = SqliteStore(tmp_path / "store.sqlite3")
    store.open()
    hints = tuple(f"tests/test_{n}.py::test_case_{n}" for n in range(60))
    gone = obs("m-gone", source_range=obs("x").source_range.__class__("t2", 0, 1))
    kept = obs("m-kept", query_hints=hints, metadata={
        "files": [f"src/f{n}.py" for n in range(40)],
        "superseded_facts": {"env:A": {"value": "1", "new_value": "2",
                                       "superseded_by": "m-gone"}}})
    store.memories.upsert_memories([gone, kept])
    kinds = dict(store.db.read("SELECT id, typeof(query_hints) || '/' || typeof(metadata) "
                               "FROM agent_memories"))
    assert kinds == {"m-kept": "blob/blob", "m-gone": "text/text"}  # short ones stay text
    assert store.memories.get_memories("alice", ["m-kept"]) == [kept]
    row = store.memories.get_memory_row("alice", "m-kept")
    assert row is not None and row["query_hints"] == list(hints)
    assert row["metadata"] == kept.metadata
    plan = store.erasure.plan(Scope("thread", "alice", thread_id="t2"))
    assert plan is not None and plan.memory_ids == ["m-gone"]
    store.erasure.erase(plan)
    after = store.memories.get_memory_row("alice", "m-kept")
    assert after is not None and "superseded_facts" not in after["metadata"]
    assert after["metadata"]["files"] == kept.metadata["files"]
    store.close()

"""SqliteStore on a tmp_path, plus the backend contract that MySqlStore runs too.

:class:`StoreContract` holds every test body; a backend's test class supplies the
``make_store`` fixture (a factory of unopened stores on one database).
tests/integration/test_mysql_store.py runs the same class against the real MariaDB.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from breadcrumb.stores.sql.base import SqlStore
from breadcrumb.stores.sql.core import IndexConflictError, StoreClosedError, TenantMismatchError
from breadcrumb.stores.sql.mysql.store import MySqlStore
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.topics.records import (
    Chunk,
    DeadLetter,
    Event,
    Fact,
    MemoryStatusChange,
    Observation,
    SourceRange,
)

StoreFactory = Callable[[], SqlStore]

TRICKY_CONTENT = [
    "認証ドメインを example.co.jp に変更しました。",
    "emoji 🍞🥖 and ZWJ 👩‍💻 and flags 🇯🇵",
    "".join(chr(c) for c in range(1, 32)) + "\x7f",
    "line one\r\nline two\r\n\r\n",
    "trailing spaces   \t  ",
    "   leading spaces",
    "",
    "quotes ' \" ` backslash \\ percent % question ? semicolon ;",
    "big " + "0123456789abcdef" * 8192,  # 128 KiB: beyond MySQL TEXT's 64 KiB
]


def ev(user: str, thread: str, index: int, event_id: str | None = None,
       content: str = "hello", **kw: Any) -> Event:
    """A stored-shape event (index set)."""
    return Event(event_id=event_id or f"{user}-{thread}-{index}", user_id=user, thread_id=thread,
                 ts=f"2025-01-01T00:00:{index % 60:02d}Z", role="assistant", kind="message",
                 content=content, index=index, **kw)


def obs(mid: str, user: str = "alice", summary: str = "changed the auth domain",
        **kw: Any) -> Observation:
    """An observation with every field filled."""
    base: dict[str, Any] = dict(
        id=mid, user_id=user, project_id="proj", summary=summary,
        source_range=SourceRange("t1", 0, 4), tags=("auth", "環境"), query_hints=("domain?",),
        retrieve_when="when auth domains come up", importance=0.75,
        created_at="2025-01-01T00:00:04Z",
        facts=(Fact("env:AUTH_ALLOWED_DOMAINS", "example.co.jp ", "e3", 3),),
        metadata={"observer": "rules", "n": 1, "nested": {"ok": True}},
    )
    base.update(kw)
    return Observation(**base)


def chunk(cid: str, mid: str, user: str = "alice", index: int = 0, start: int = 0) -> Chunk:
    return Chunk(id=cid, memory_id=mid, user_id=user, project_id=None, thread_id="t1",
                 event_id=f"e{index}", event_index=index, char_start=start, char_end=start + 5,
                 text="déjà\r\n", tokens=3)


class StoreContract:
    """Behaviour every SqlStore backend must have. Subclasses provide ``make_store``."""

    @pytest.fixture
    def store(self, make_store: StoreFactory) -> Iterator[SqlStore]:
        st = make_store()
        st.open()
        yield st
        st.close()

    # --- lifecycle / durability ------------------------------------------------------------

    def test_methods_need_open_and_open_is_idempotent(self, make_store: StoreFactory) -> None:
        st = make_store()
        with pytest.raises(StoreClosedError):
            st.events.count_events()
        st.open()
        st.open()
        assert st.events.count_events() == 0
        st.close()
        st.close()

    def test_everything_survives_close_and_reopen(self, store: SqlStore,
                                                   make_store: StoreFactory) -> None:
        store.events.put_event(ev("alice", "t1", 0, content=TRICKY_CONTENT[0]))
        store.memories.upsert_memory(obs("m1"))
        store.states.put_state("alice/t1", {"pending": [1, 2]})
        store.log.append_log([("alice", "e9", "alice/t1", '{"a":1}')])
        store.counters.incr("events_received", 3)
        store.close()
        again = make_store()
        again.open()
        try:
            assert again.events.get_event("alice", "alice-t1-0") == ev("alice", "t1", 0,
                                                                 content=TRICKY_CONTENT[0])
            assert again.memories.get_memory("alice", "m1") == obs("m1")
            assert again.states.get_state("alice/t1") == {"pending": [1, 2]}
            assert again.log.read_log(0, 10)[0][1] == '{"a":1}'
            assert again.counters.get_counters() == {"events_received": 3}
        finally:
            again.close()

    def test_an_old_schema_gets_escaped_thread_keys(self, store: SqlStore,
                                                     make_store: StoreFactory) -> None:
        """Issue 12: schema 1 keyed threads ``{user}/{thread}``; opening upgrades them (to
        2, and on to the current version)."""
        from breadcrumb.stores.sql.migrate import SCHEMA_VERSION, stored_version

        assert stored_version(store.db) == SCHEMA_VERSION == 6
        state = {"user_id": "acme/x", "thread_id": "y", "pending": [1]}
        plain = {"user_id": "acme", "thread_id": "x/z", "pending": []}
        store.states.put_state("acme/x/y", state)  # written the schema-1 way
        store.states.put_state("acme/x/z", plain)
        store.states.put_state("100%/t", {"user_id": "100%", "thread_id": "t", "pending": []})
        marker = '{"_control":"flush","user_id":"acme/x","thread_id":"y","ts":"t"}'
        store.log.append_log([("acme/x", "e1", "acme/x/y", '{"user_id":"acme/x","thread_id":"y"}'),
                          (None, None, "acme/x/y", marker),
                          ("acme", "e2", "acme/x/z", '{"user_id":"acme","thread_id":"x/z"}')])
        with store.transaction():
            store.db.execute("DELETE FROM schema_meta")
        store.close()
        again = make_store()
        again.open()
        try:
            assert stored_version(again.db) == SCHEMA_VERSION
            assert again.states.get_state("acme%2Fx/y") == state
            assert again.states.get_state("acme/x/y") is None
            assert again.states.get_state("acme/x/z") == plain
            assert again.states.get_state("100%25/t") is not None
            keys = [k for (k,) in again.db.read("SELECT thread_key FROM event_log ORDER BY seq")]
            assert keys == ["acme%2Fx/y", "acme%2Fx/y", "acme/x/z"]
        finally:
            again.close()

    # --- raw events --------------------------------------------------------------------------

    @pytest.mark.parametrize("content", TRICKY_CONTENT, ids=range(len(TRICKY_CONTENT)))
    def test_event_content_round_trips_exactly(self, store: SqlStore, content: str) -> None:
        e = ev("alice", "t1", 0, content=content, project_id="p", agent_id="a", tool="bash",
               attrs={"path": "src/認証.ts", "exit_code": 1, "big": 2**53}, tokens=7)
        assert store.events.put_event(e) is True
        got = store.events.get_event("alice", e.event_id)
        assert got == e
        assert got is not None and got.content.encode() == content.encode()

    def test_duplicate_event_id_returns_false_and_changes_nothing(self, store: SqlStore) -> None:
        assert store.events.put_event(ev("alice", "t1", 0, "dup", content="first"))
        assert store.events.put_event(ev("alice", "t1", 5, "dup", content="second")) is False
        assert store.events.count_events() == 1
        assert store.events.get_range("alice", "t1", 0, 10) \
            == [ev("alice", "t1", 0, "dup", "first")]

    def test_other_event_on_taken_index_raises(self, store: SqlStore) -> None:
        store.events.put_event(ev("alice", "t1", 0, "a"))
        with pytest.raises(IndexConflictError):
            store.events.put_event(ev("alice", "t1", 0, "b"))
        assert store.events.get_event("alice", "b") is None
        with pytest.raises(ValueError):
            store.events.put_event(Event("x", "alice", "t1", "2025-01-01T00:00:00Z", "user",
                                         "note", ""))

    def test_get_range_bounds_and_order(self, store: SqlStore) -> None:
        for i in (3, 0, 2, 1, 4):
            store.events.put_event(ev("alice", "t1", i))
        store.events.put_event(ev("alice", "t2", 1))
        assert [e.index for e in store.events.get_range("alice", "t1", 1, 3)] == [1, 2, 3]
        assert store.events.get_range("alice", "t1", 7, 9) == []
        assert store.events.count_events() == 6

    def test_events_are_isolated_per_user(self, store: SqlStore) -> None:
        # Ids differing only by case or a trailing space are different tenants.
        users = ["alice", "Alice", "alice "]
        for n, user in enumerate(users):
            assert store.events.put_event(ev(user, "t1", 0, "same-id", content=f"of {n}"))
        for n, user in enumerate(users):
            got = store.events.get_event(user, "same-id")
            assert got is not None and got.content == f"of {n}" and got.user_id == user
            assert [e.user_id for e in store.events.get_range(user, "t1", 0, 0)] == [user]
        assert store.events.get_event("bob", "same-id") is None

    def test_iter_all_events_orders_and_resumes(self, store: SqlStore) -> None:
        keys = [("bob", "t1", 0), ("alice", "t2", 0), ("alice", "t1", 1), ("alice", "t1", 0),
                ("bob", "t0", 3)]
        for u, t, i in keys:
            store.events.put_event(ev(u, t, i))
        expected = sorted(keys)
        seen = [(e.user_id, e.thread_id, e.index) for e in store.events.iter_all_events(batch=2)]
        assert seen == expected
        rest = store.events.iter_all_events(after=expected[1], batch=2)
        assert [(e.user_id, e.thread_id, e.index) for e in rest] == expected[2:]

    # --- memories and chunks -----------------------------------------------------------------

    def test_memory_round_trip(self, store: SqlStore) -> None:
        o = obs("m1", supersedes_memory_id="m0", status="active", tier="confirmed")
        store.memories.upsert_memory(o)
        assert store.memories.get_memory("alice", "m1") == o
        assert store.memories.get_memory("alice", "nope") is None

    def test_upsert_keeps_lifecycle_fields(self, store: SqlStore) -> None:
        store.memories.upsert_memory(obs("m1"))
        assert store.memories.apply_status_change(MemoryStatusChange(
            "m1", "alice", "superseded", "confirmed", "2025-02-01T00:00:00Z", "lifecycle",
            "newer value", superseded_by="m2"))
        store.memories.record_usage("alice", ["m1"], "2025-02-02T00:00:00Z")
        store.memories.upsert_memory(obs("m1", summary="re-derived", importance=0.5))
        row = store.memories.get_memory_row("alice", "m1")
        assert row is not None
        assert (row["summary"], row["importance"]) == ("re-derived", 0.5)
        assert (row["status"], row["tier"], row["superseded_by"]) == (
            "superseded", "confirmed", "m2")
        assert (row["hit_count"], row["last_used_at"]) == (1, "2025-02-02T00:00:00Z")
        assert store.memories.memory_counts()["by_status"] == {"superseded": 1}
        assert not store.memories.apply_status_change(MemoryStatusChange(
            "m1", "bob", "archived", "active", "2025-02-03T00:00:00Z", "x", "not bob's"))

    def test_decoded_memories_follow_every_change(self, store: SqlStore) -> None:
        # get_memories reuses a memory decoded from an identical row: a change must show
        store.memories.upsert_memory(obs("m1"))
        first = store.memories.get_memory("alice", "m1")
        store.memories.record_usage("alice", ["m1"], "2025-02-02T00:00:00Z")  # not part of a memory
        assert store.memories.get_memories("alice", ["m1", "m1"]) == [first] == [obs("m1")]
        store.memories.upsert_memory(obs("m1", summary="re-derived", metadata={"n": 2}))
        again = store.memories.get_memory("alice", "m1")
        assert again is not None
        assert (again.summary, again.metadata) == ("re-derived", {"n": 2})
        assert store.memories.apply_status_change(MemoryStatusChange(
            "m1", "alice", "archived", "cold", "2025-02-03T00:00:00Z", "lifecycle", "old"))
        archived = store.memories.get_memory("alice", "m1")
        assert archived is not None and (archived.status, archived.tier) == ("archived", "cold")
        assert store.memories.get_memory("bob", "m1") is None  # the owner check is not cached away

    def test_memories_never_cross_users(self, store: SqlStore) -> None:
        store.memories.upsert_memory(obs("m1"))
        store.memories.upsert_memory(obs("m2"))
        store.memories.upsert_memory(obs("b1", user="bob"))
        assert store.memories.get_memory("bob", "m1") is None
        got = store.memories.get_memories("alice", ["m2", "b1", "missing", "m1", "m2"])
        assert [o.id for o in got] == ["m2", "m1"]
        assert store.memories.get_memories("alice", []) == []
        with pytest.raises(TenantMismatchError):
            store.memories.upsert_memory(obs("b1", user="alice"))
        assert store.memories.get_memory("bob", "b1") == obs("b1", user="bob")

    def test_record_usage_and_counts(self, store: SqlStore) -> None:
        store.memories.upsert_memory(obs("m1"))
        store.memories.upsert_memory(obs("m2", tier="confirmed"))
        store.memories.upsert_memory(obs("b1", user="bob", status="archived"))
        store.memories.record_usage("alice", ["m1", "m1", "b1"], "t-1")
        store.memories.record_usage("alice", ["m1"], "t-2")
        store.memories.record_usage("alice", [], "t-3")
        rows = {m: store.memories.get_memory_row(u, m) for u, m in
                [("alice", "m1"), ("alice", "m2"), ("bob", "b1")]}
        assert {m: (r or {}).get("hit_count") for m, r in rows.items()} == {
            "m1": 2, "m2": 0, "b1": 0}
        assert (rows["m1"] or {})["last_used_at"] == "t-2"
        assert store.memories.memory_counts() == {"by_status": {"active": 2, "archived": 1},
                                         "by_tier": {"provisional": 2, "confirmed": 1}}

    def test_list_memories_pages_newest_first(self, store: SqlStore) -> None:
        for n in range(5):
            store.memories.upsert_memory(obs(f"m{n}", created_at=f"2025-01-0{n + 1}T00:00:00Z"))
        store.memories.upsert_memory(obs("b1", user="bob"))
        assert [o.id for o in store.memories.list_memories("alice", limit=2)] == ["m4", "m3"]
        assert [o.id for o in store.memories.list_memories("alice", 2, 4)] == ["m0"]

    def test_chunks_round_trip_upsert_and_isolation(self, store: SqlStore) -> None:
        chunks = [chunk("c2", "m1", index=1), chunk("c1", "m1", index=0, start=6),
                  chunk("c0", "m1", index=0), chunk("x", "m1", user="bob")]
        store.chunks.put_chunks(chunks)
        store.chunks.put_chunks(chunks[:1])
        store.chunks.put_chunks([])
        assert [c.id for c in store.chunks.get_chunks("alice", "m1")] == ["c0", "c1", "c2"]
        assert store.chunks.get_chunks("alice", "m1")[0] == chunks[2]
        assert store.chunks.get_chunks("bob", "m1") == [chunks[3]]

    def test_audit_trail(self, store: SqlStore) -> None:
        store.audit.add_audit("m1", "alice", "t1", "lifecycle", "status", "active",
                              "superseded", "m2")
        store.audit.add_audit("m1", "alice", "t2", "user", "tier", None, "confirmed", None)
        store.audit.add_audit("m1", "bob", "t3", "user", "tier", None, "x", None)
        trail = store.audit.list_audit("alice", "m1")
        assert [(a["at"], a["field"], a["from_value"], a["to_value"]) for a in trail] == [
            ("t1", "status", "active", "superseded"), ("t2", "tier", None, "confirmed")]

    # --- dead letters, state, counters --------------------------------------------------------

    def test_dead_letters(self, store: SqlStore) -> None:
        letters = [DeadLetter("bad json", TRICKY_CONTENT[n], f"t{n}", field="content",
                              event_id=f"e{n}", user_id="alice") for n in range(3)]
        for letter in letters:
            store.dead_letters.put_dead_letter(letter)
        assert store.dead_letters.count_dead_letters() == 3
        assert store.dead_letters.list_dead_letters(2) == [letters[2], letters[1]]

    def test_thread_state_and_pending_count(self, store: SqlStore) -> None:
        assert store.states.get_state("alice/t1") is None
        store.states.put_state("alice/t1", {"pending": [{"i": 0}, {"i": 1}], "next_index": 2})
        store.states.put_state("alice/t2", {"pending": [1]})
        store.states.put_state("bob/t1", {"next_index": 4})
        assert store.states.count_pending_window_events() == 3
        store.states.put_state("alice/t1", {"pending": [], "next_index": 2, "名": "値"})
        assert store.states.get_state("alice/t1") == {"pending": [], "next_index": 2, "名": "値"}
        assert store.states.count_pending_window_events() == 1
        assert store.states.list_states() == [("alice/t2", {"pending": [1]})]
        assert len(store.states.list_states(pending_only=False)) == 3

    def test_counters(self, store: SqlStore) -> None:
        store.counters.incr("events_received")
        store.counters.incr("events_received", 4)
        store.counters.incr("duplicates", 0)
        assert store.counters.get_counters() == {"events_received": 5, "duplicates": 0}

    # --- event log ----------------------------------------------------------------------------

    def test_log_dedupes_per_user_event_id(self, store: SqlStore) -> None:
        first = store.log.append_log([("alice", "e1", "alice/t1", "p1"), ("alice", "e1", "alice/t1",
                                  "p1-again"), (None, None, "alice/t1", "flush"),
                                  ("bob", "e1", "bob/t1", "p2")])
        assert first == [True, False, True, True]
        assert store.log.append_log([("alice", "e1", "alice/t1", "p3"),
                                 (None, None, "alice/t1", "flush")]) == [False, True]
        assert store.log.count_log() == 4 and store.log.count_unprocessed() == 4
        log = store.log.read_log(0, 10)
        assert [p for _, p in log] == ["p1", "flush", "p2", "flush"]
        assert [q for q, _ in log] == sorted(q for q, _ in log)
        store.log.mark_processed(log[0][0])
        assert [p for _, p in store.log.read_log(0, 10)] == ["flush", "p2", "flush"]
        assert store.log.read_log(log[2][0], 10) == [log[3]]
        assert store.log.read_log(0, 1) == [log[1]]
        assert store.log.count_unprocessed() == 3 and store.log.count_log() == 4

    def test_log_batch_is_atomic(self, store: SqlStore) -> None:
        bad = cast(Any, None)  # NOT NULL violation: must raise, not count as a duplicate
        with pytest.raises(Exception, match="(?i)null"):
            store.log.append_log([("alice", "e1", "alice/t1", "p1"), ("alice", "e2", bad, "p2")])
        assert store.log.count_log() == 0

    # --- transactions -------------------------------------------------------------------------

    def test_transaction_rolls_back_everything_on_exception(self, store: SqlStore) -> None:
        store.log.append_log([("alice", "e0", "alice/t1", "p")])
        seq = store.log.read_log(0, 1)[0][0]
        with pytest.raises(RuntimeError), store.transaction():
            store.states.put_state("alice/t1", {"pending": [1]})
            store.events.put_event(ev("alice", "t1", 0))
            store.memories.upsert_memory(obs("m1"))
            store.chunks.put_chunks([chunk("c0", "m1")])
            store.log.mark_processed(seq)
            store.counters.incr("processed")
            with store.transaction():
                store.dead_letters.put_dead_letter(DeadLetter("r", "p", "t"))
            raise RuntimeError("boom")
        assert store.events.count_events() == 0 and store.states.get_state("alice/t1") is None
        assert store.memories.get_memory("alice", "m1") is None
        assert store.dead_letters.count_dead_letters() == 0
        assert store.log.count_unprocessed() == 1 and store.counters.get_counters() == {}
        store.events.put_event(ev("alice", "t1", 0))  # the store is usable afterwards
        assert store.events.count_events() == 1

    def test_nested_transaction_commits_only_at_outermost_exit(
            self, store: SqlStore, make_store: StoreFactory) -> None:
        observer = make_store()
        observer.open()
        try:
            with store.transaction():
                with store.transaction():
                    store.events.put_event(ev("alice", "t1", 0))
                store.counters.incr("processed")
                assert store.events.count_events() == 1  # visible to its own transaction
                assert observer.events.count_events() == 0  # not committed yet
            assert observer.events.count_events() == 1
            assert observer.counters.get_counters() == {"processed": 1}
        finally:
            observer.close()


class TestSqliteStore(StoreContract):
    """The contract on a SQLite file, plus SQLite-only behaviour."""

    @pytest.fixture
    def make_store(self, tmp_path: Path) -> StoreFactory:
        return lambda: SqliteStore(tmp_path / "nested" / "breadcrumb.sqlite3")

    def test_wal_and_full_sync(self, store: SqlStore) -> None:
        assert store.db.read("PRAGMA journal_mode") == [("wal",)]
        assert store.db.read("PRAGMA synchronous") == [(2,)]  # FULL

    def test_committed_write_survives_a_killed_process(self, tmp_path: Path) -> None:
        path = tmp_path / "crash.sqlite3"
        code = (
            "import os, sys; from pathlib import Path\n"
            "from breadcrumb.stores.sql.sqlite.store import SqliteStore\n"
            "s = SqliteStore(Path(sys.argv[1])); s.open()\n"
            "s.log.append_log([('alice', 'e1', 'alice/t1', 'payload')])\nos._exit(0)\n"
        )
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=30,
                       cwd=Path(__file__).resolve().parents[3])
        with SqliteStore(path) as st:
            assert [p for _, p in st.log.read_log(0, 10)] == ["payload"]

    def test_threads_share_one_store(self, store: SqlStore) -> None:
        errors: list[BaseException] = []

        def work(user: str) -> None:
            try:
                for i in range(40):
                    with store.transaction():
                        store.events.put_event(ev(user, "t1", i))
                        store.counters.incr("processed")
                    store.events.get_range(user, "t1", 0, i)
            except BaseException as exc:  # surfaced by the assert below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(u,)) for u in ("alice", "bob", "carol")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert errors == []
        assert store.events.count_events() == 120
        assert store.counters.get_counters() == {"processed": 120}


def test_mysql_store_constructor_does_not_connect() -> None:
    st = MySqlStore(host="127.0.0.1", port=1, user="u", password="s3cret", database="d",
                    ssl_ca=Path("/etc/ca.pem"), ssl_verify_identity=True)
    assert "s3cret" not in repr(st)
    assert st.db.connect_kwargs()["ssl"] == {"ca": "/etc/ca.pem", "check_hostname": True}
    assert "ssl_disabled" not in st.db.connect_kwargs()
    plain = MySqlStore(password="x").db.connect_kwargs()
    # no CA: no TLS, said explicitly (PyMySQL >= 1.2 would otherwise try "preferred" TLS
    # and build a default TLS context on every connect)
    assert "ssl" not in plain and plain["ssl_disabled"] is True
    with pytest.raises(StoreClosedError):
        st.counters.get_counters()

"""SqliteStore's thread states between batches (stores/sql/sqlite/states.py) and its counters
written many at once: the same rows and answers as one statement per call."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from breadcrumb.stores.sql.schema import dumps
from breadcrumb.stores.sql.sqlite.states import _state_json, _state_value
from breadcrumb.stores.sql.sqlite.store import SqliteStore


def rows(path: Path) -> list[tuple[object, ...]]:
    """thread_state as another connection sees it (committed rows only, in key order: the
    table is ``WITHOUT ROWID``, schema 5), updated_at aside."""
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT state_key, state, pending_count FROM thread_state "
                            "ORDER BY state_key").fetchall()


def test_committed_states_read_back_equal_and_fresh(store: SqliteStore) -> None:
    store.states.put_state("u/a", {"pending": [[0, "e", 3, "message", "t"]], "next_index": 1})
    first = store.states.get_state("u/a")
    assert first == {"pending": [[0, "e", 3, "message", "t"]], "next_index": 1}
    assert first is not None
    first["next_index"] = 99  # a caller's change never reaches the next read
    assert store.states.get_state("u/a") == {"pending": [[0, "e", 3, "message", "t"]],
                                             "next_index": 1}
    assert rows(store.path) == [("u/a", dumps({"pending": [[0, "e", 3, "message", "t"]],
                                                  "next_index": 1}), 1)]

def test_a_transaction_sees_its_writes_and_a_rollback_forgets_them(store: SqliteStore) -> None:
    store.states.put_state("u/a", {"next_index": 1})

    class Boom(Exception):
        pass

    with pytest.raises(Boom), store.transaction():
        store.states.put_state("u/a", {"next_index": 2})
        store.states.put_state("u/b", {"next_index": 5})
        assert store.states.get_state("u/a") == {"next_index": 2}
        assert store.states.get_state("u/b") == {"next_index": 5}
        raise Boom
    assert store.states.get_state("u/a") == {"next_index": 1}
    assert store.states.get_state("u/b") is None
    assert [r[0] for r in rows(store.path)] == ["u/a"]


def test_writes_reach_sql_at_the_commit(store: SqliteStore) -> None:
    with store.transaction():
        store.states.put_state("u/b", {"next_index": 1})
        store.states.put_state("u/a", {"next_index": 1})
        store.states.put_state("u/b", {"next_index": 2, "pending": [[1, "x", 1, "message", "t"]]})
        assert rows(store.path) == []  # not committed yet
    assert [(r[0], r[2]) for r in rows(store.path)] == [("u/a", 0), ("u/b", 1)]
    reopened = SqliteStore(store.path)
    with reopened:
        assert reopened.states.get_state("u/b") == store.states.get_state("u/b")


def test_sql_readers_inside_a_transaction_see_the_staged_states(store: SqliteStore) -> None:
    with store.transaction():
        store.states.put_state("u/a", {"user_id": "u", "pending": [[0, "e", 1, "message", "t"]]})
        assert store.states.count_pending_window_events() == 1
        assert [k for k, _ in store.states.list_open_states("u")] == ["u/a"]
        assert [k for k, _ in store.states.list_states()] == ["u/a"]
        assert set(store.states.get_states(["u/a", "u/z"])) == {"u/a"}
        store.states.put_state("u/a", {"user_id": "u", "pending": []})  # after an early write
    assert store.states.count_pending_window_events() == 0
    assert store.states.get_state("u/a") == {"user_id": "u", "pending": []}


def test_close_and_drop_forget_the_cache(store: SqliteStore) -> None:
    store.states.put_state("u/a", {"next_index": 1})
    store.drop_tables()
    store.close()
    store.open()
    assert store.states.get_state("u/a") is None
    store.states.put_state("u/a", {"next_index": 2})
    store.close()
    with sqlite3.connect(store.path) as conn:  # changed while closed: reopening reads SQL
        conn.execute("UPDATE thread_state SET state = '{\"next_index\":3}'")
    store.open()
    assert store.states.get_state("u/a") == {"next_index": 3}


def test_set_and_drop_counters_many(store: SqliteStore) -> None:
    store.counters.set_counter("a", 1)
    with store.transaction():
        store.counters.set_counters([("a", 5), ("b", 2), ("c", 3)])
        store.counters.drop_counters(["c", "absent"])
    assert store.counters.get_counters() == {"a": 5, "b": 2}
    store.counters.set_counters([])
    store.counters.drop_counters([])
    assert store.counters.get_counters() == {"a": 5, "b": 2}


def test_state_text_is_sql_schema_dumps_for_every_code_point() -> None:
    """orjson's text of a state is the stdlib encoder's, byte for byte, for every character
    (escapes included) and for the ints, None, bools and lists a state holds."""
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(chars), 4096):
        text = "".join(chars[start:start + 4096])
        state = {"thread_id": text, "pending": [[0, text, -3, "k", None]], "x": True}
        assert _state_json(state) == dumps(state)
        assert _state_value(_state_json(state)) == state
    for value in (2**63 - 1, -2**63, 0, []):
        assert _state_json({"v": value}) == dumps({"v": value})


def test_state_values_orjson_refuses_go_through_the_stdlib(store: SqliteStore) -> None:
    odd = {"big": 2**70, "lone": "\ud800", "nan": float("nan")}
    assert _state_json(odd) == dumps(odd)  # orjson refuses the big int: the stdlib text
    back = _state_value(_state_json(odd))  # NaN and the big int: json.loads reads it
    assert back["big"] == 2**70 and back["lone"] == "\ud800" and back["nan"] != back["nan"]
    store.states.put_state("u/odd", {"next_index": 2**70})
    assert store.states.get_state("u/odd") == {"next_index": 2**70}


def test_a_tenants_open_windows_are_read_without_its_closed_threads(store: SqliteStore) -> None:
    """Issue 49: recall reads a tenant's open windows on every request; a partial index
    holds only threads with pending events, so closed ones are not read at all."""
    with store.transaction():
        for n in range(300):  # closed threads of u, then open ones of u and of another tenant
            store.states.put_state(f"u/t{n:03d}", {"user_id": "u", "pending": []})
        store.states.put_state("u/t150x", {"user_id": "u", "pending": [[0, "e", 1, "m", "t"]]})
        store.states.put_state("v/t1", {"user_id": "v", "pending": [[0, "e", 1, "m", "t"]]})
    assert [k for k, _ in store.states.list_open_states("u")] == ["u/t150x"]
    plan = " ".join(str(r[-1]) for r in store.db.read(
        "EXPLAIN QUERY PLAN SELECT state_key, state FROM thread_state WHERE state_key >= ? "
        "AND state_key < ? AND pending_count > 0", ("u/", "u0")))
    assert "open_thread_state_state_key" in plan, plan


def test_states_whose_windows_close_leave_no_empty_pages_behind(store: SqliteStore) -> None:
    """Issue 49, schema 5: a thread's row grows while its window is open and shrinks when it
    closes. Kept in rowid order, the space a closed row gave back was never reused (new
    threads go at the end): 81 % of the table's pages were empty at a million events. In key
    order new threads fill it: here the table's pages hold at least half live bytes."""
    event = [0, "cb85bd59-83f0-5546-8d7e-dcf1c0ba2deb", 60, "message", "2026-12-07T18:16:14Z"]
    open_now: dict[str, int] = {}
    started = 0
    for batch in range(120):
        with store.transaction():  # one batch of the pipeline
            for step in range(batch * 100, batch * 100 + 100):
                while len(open_now) < 60:
                    key = f"cost-{started % 4}/agent-{started % 40:03d}-s{started // 40:04d}"
                    open_now[key] = 0
                    started += 1
                key = sorted(open_now)[(step * 7919) % len(open_now)]
                open_now[key] += 1
                done = open_now[key] == 12
                pending = [[i, *event[1:]] for i in range(open_now[key])] if not done else []
                store.states.put_state(key, {"user_id": "cost-0", "thread_id": key,
                                             "project_id": "p", "next_index": open_now[key],
                                             "pending": pending})
                if done:
                    del open_now[key]
    assert started > 950
    live, pages = store.db.read("SELECT SUM(payload), SUM(pgsize) FROM dbstat "
                                "WHERE name = 'thread_state'")[0]
    assert live * 2 >= pages, (live, pages)


def test_a_schema_4_thread_state_is_rebuilt_in_key_order(tmp_path: Path) -> None:
    """Schema 4 kept ``thread_state`` in rowid order: opening copies every row (open windows
    and closed threads) into the ``WITHOUT ROWID`` table, with the same indexes."""
    from breadcrumb.stores.sql.migrate import SCHEMA_VERSION, stored_version

    path = tmp_path / "old.sqlite3"
    old = SqliteStore(path)
    with old:
        old.states.put_state("u/open", {"next_index": 2, "pending": [[0, "e", 3, "message", "t"],
                                                                      [1, "f", 4, "message", "t"]]})
        old.states.put_state("u/closed", {"next_index": 7, "pending": []})
        with old.db.transaction():  # the table as schema 4 made it
            old.db.execute("CREATE TABLE ts4 AS SELECT * FROM thread_state")
            old.db.execute("DROP TABLE thread_state")
            old.db.execute("CREATE TABLE thread_state (state_key TEXT NOT NULL, state TEXT NOT "
                           "NULL, pending_count INTEGER NOT NULL DEFAULT 0, updated_at TEXT NOT "
                           "NULL, PRIMARY KEY (state_key))")
            old.db.execute("INSERT INTO thread_state SELECT * FROM ts4")
            old.db.execute("DROP TABLE ts4")
            old.db.execute("CREATE INDEX ix_thread_state_pending_count ON thread_state "
                           "(pending_count)")
            old.db.execute("UPDATE schema_meta SET value = 4 WHERE name = 'version'")
    again = SqliteStore(path)
    with again:
        assert stored_version(again.db) == SCHEMA_VERSION == 6
        (sql,), = again.db.read("SELECT sql FROM sqlite_schema WHERE name = 'thread_state'")
        assert sql.rstrip().endswith("WITHOUT ROWID")
        indexes = {n for (n,) in again.db.read(
            "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'thread_state'")}
        assert {"ix_thread_state_pending_count", "open_thread_state_state_key"} <= indexes
        assert again.states.get_state("u/closed") == {"next_index": 7, "pending": []}
        assert [k for k, _ in again.states.list_states()] == ["u/open"]
        assert again.states.count_pending_window_events() == 2

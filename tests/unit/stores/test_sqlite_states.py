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
    """thread_state as another connection sees it (committed rows only), updated_at aside."""
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT rowid, state_key, state, pending_count FROM thread_state "
                            "ORDER BY rowid").fetchall()


def test_committed_states_read_back_equal_and_fresh(store: SqliteStore) -> None:
    store.states.put_state("u/a", {"pending": [[0, "e", 3, "message", "t"]], "next_index": 1})
    first = store.states.get_state("u/a")
    assert first == {"pending": [[0, "e", 3, "message", "t"]], "next_index": 1}
    assert first is not None
    first["next_index"] = 99  # a caller's change never reaches the next read
    assert store.states.get_state("u/a") == {"pending": [[0, "e", 3, "message", "t"]],
                                             "next_index": 1}
    assert rows(store.path) == [(1, "u/a", dumps({"pending": [[0, "e", 3, "message", "t"]],
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
    assert [r[1] for r in rows(store.path)] == ["u/a"]


def test_writes_reach_sql_at_the_commit_in_first_write_order(store: SqliteStore) -> None:
    with store.transaction():
        store.states.put_state("u/b", {"next_index": 1})
        store.states.put_state("u/a", {"next_index": 1})
        store.states.put_state("u/b", {"next_index": 2, "pending": [[1, "x", 1, "message", "t"]]})
        assert rows(store.path) == []  # not committed yet
    assert [(r[1], r[3]) for r in rows(store.path)] == [("u/b", 1), ("u/a", 0)]
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

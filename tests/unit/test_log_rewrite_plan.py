"""The pure parts of the log rewrite (issue 26): what a record is asked against the
tombstones, which records survive, and the per-key order check after the copies."""

from __future__ import annotations

import base64
from typing import Any

import orjson

from breadcrumb.processors.log_rewrite_plan import (
    DEAD_LETTERS,
    EVENTS,
    OBSERVATIONS,
    LogRecord,
    arrivals,
    erased_indexes,
    is_flush_marker,
    order_violations,
    record_scopes,
    survivors,
)
from breadcrumb.stores.ports.tables import Plan, Scope
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.streams.kafka.log_rewrite import fence_value, tombstone_predicate
from breadcrumb.topics.records import FlushMarker, thread_key


def _rec(offset: int, key: str | None, value: Any, ts_ms: int = 1_764_000_000_000) -> LogRecord:
    raw = value if isinstance(value, bytes) or value is None else orjson.dumps(value)
    return LogRecord(offset, None if key is None else key.encode(), raw, (), ts_ms)


def _event(user: str, thread: str, event_id: str) -> dict[str, Any]:
    return {"event_id": event_id, "user_id": user, "thread_id": thread,
            "ts": "2026-12-01T10:00:00Z", "kind": "message", "content": "x"}


def test_an_event_is_asked_by_its_own_ids_and_by_its_key() -> None:
    rec = _rec(0, "u1/t1", _event("u1", "t1", "e1"))
    assert record_scopes(rec) == [("u1", "t1", "e1", "2026-12-01T10:00:00Z"),
                                  ("u1", "t1", "", "2026-12-01T10:00:00Z")]


def test_a_value_that_is_not_json_is_asked_by_its_key_dated_by_the_record() -> None:
    scopes = record_scopes(_rec(3, "acme%2Fx/t/1", b"\xff not json", ts_ms=0))
    assert scopes == [("acme/x", "t/1", "", "1970-01-01T00:00:00Z")]
    assert record_scopes(_rec(4, None, None)) == []


def test_a_dead_letter_is_asked_by_the_event_it_keeps_and_by_its_own_ids() -> None:
    event = _event("u2", "t9", "e7")
    letter = {"reason": "bad", "payload": orjson.dumps(event).decode(),
              "received_at": "2026-12-02T00:00:00Z", "user_id": "u2", "event_id": "e7"}
    assert record_scopes(_rec(0, None, letter), kind=DEAD_LETTERS) == [
        ("u2", "t9", "e7", "2026-12-01T10:00:00Z"), ("u2", "", "e7", "2026-12-02T00:00:00Z")]
    wrapped = {**letter, "payload": "base64:" + base64.b64encode(orjson.dumps(event)).decode(),
               "user_id": None}
    assert record_scopes(_rec(0, None, wrapped), kind=DEAD_LETTERS) == [
        ("u2", "t9", "e7", "2026-12-01T10:00:00Z")]


def test_a_memory_record_is_asked_by_its_tenant_and_source_thread() -> None:
    memory = {"id": "m1", "user_id": "u3", "summary": "s",
              "source_range": {"thread_id": "t4", "start_index": 0, "end_index": 2}}
    assert record_scopes(_rec(0, "m1", memory, ts_ms=0), kind=OBSERVATIONS) == [
        ("u3", "t4", "", "1970-01-01T00:00:00Z")]
    assert record_scopes(_rec(0, "m1", b"[]"), kind=OBSERVATIONS) == []


def test_erased_indexes_maps_scope_positions_back_to_records() -> None:
    scopes = [[("a", "t", "", "")] * 2, [], [("b", "t", "", "")], [("c", "t", "", "")] * 2]
    assert erased_indexes(scopes, {1}) == {0}
    assert erased_indexes(scopes, {2, 4}) == {2, 3}
    assert erased_indexes(scopes, set()) == set()


def test_the_tombstone_predicate_is_the_processors_check(tmp_path: Any) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    store.open()
    scope = Scope("thread", "u1", "secret-thread", None)
    store.tombstones.write(Plan(scope=scope, thread_id="secret-thread"),
                           "2026-12-02T00:00:00Z", "test")
    records = [_rec(0, "u1/keep", _event("u1", "keep", "e1")),
               _rec(1, "u1/secret-thread", _event("u1", "secret-thread", "e2")),
               _rec(2, "u1/secret-thread", b"not json under the erased key"),
               _rec(3, "u2/secret-thread", _event("u2", "secret-thread", "e3")),
               _rec(4, "u1/secret-thread",
                    FlushMarker("u1", "secret-thread", "2026-12-01T11:00:00Z").to_dict())]
    assert tombstone_predicate(store.tombstones)(records) == {1, 2, 4}  # u2: its thread stays
    letter = {"reason": "bad", "payload": orjson.dumps(_event("u1", "secret-thread", "e5"))
              .decode(), "received_at": "2026-12-02T00:00:00Z"}
    assert tombstone_predicate(store.tombstones, kind=DEAD_LETTERS)([_rec(0, None, letter)]) == {0}


def test_tenant_and_memory_tombstones_are_asked_the_same_way(tmp_path: Any) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    store.open()
    store.tombstones.write(Plan(scope=Scope("tenant", "u1")), "2026-12-02T00:00:00Z", "t")
    store.tombstones.write(Plan(scope=Scope("memory", "u2", None, "m1"), event_ids=["e9"]),
                           "2026-12-02T00:00:00Z", "t")
    later = {**_event("u1", "t1", "e2"), "ts": "2026-12-03T00:00:00Z"}
    records = [_rec(0, "u1/t1", _event("u1", "t1", "e1")),  # before the tenant's erasure
               _rec(1, "u1/t1", later),  # after it: the tenant starts afresh
               _rec(2, "u2/t2", _event("u2", "t2", "e9")),  # the forgotten memory's event
               _rec(3, "u2/t2", _event("u2", "t2", "e8"))]
    assert tombstone_predicate(store.tombstones)(records) == {0, 2}


def test_no_violation_when_every_arrival_follows_its_keys_copies() -> None:
    tail = [_rec(10, "k1", {}), _rec(11, "k2", {}), _rec(12, "k1", {}), _rec(13, "k2", {})]
    assert order_violations(tail, copies={10, 11}) == []
    assert arrivals(tail, {10, 11}) == tail[2:]


def test_an_arrival_before_a_copy_of_its_key_is_a_violation() -> None:
    tail = [_rec(10, "k1", {}), _rec(11, "k2", {}), _rec(12, "k1", {}), _rec(13, "k2", {}),
            _rec(14, "k1", {})]
    # k2's live record (11) precedes k2's copy 13; k1's copies 10, 12 precede its live 14
    assert order_violations(tail, copies={10, 12, 13}) == [b"k2"]
    assert [r.offset for r in arrivals(tail, {10, 12, 13})] == [11, 14]


def test_records_without_a_key_have_no_order_to_keep() -> None:
    tail = [_rec(5, None, {}), _rec(6, None, {})]
    assert order_violations(tail, copies={6}) == []


def test_the_fence_names_no_tenant() -> None:
    key, value = fence_value(EVENTS)
    entry = orjson.loads(value)
    assert FlushMarker.is_flush(entry) and key == thread_key(entry["user_id"],
                                                              entry["thread_id"]).encode()
    assert entry["user_id"] == "__breadcrumb"
    key, value = fence_value(DEAD_LETTERS)
    assert key is None and orjson.loads(value)["payload"] == ""


def test_log_rewrite_refuses_embedded_mode_in_one_line(capsys: Any) -> None:
    from breadcrumb.cli import main

    assert main(["log", "rewrite", "--mode", "embedded"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cluster mode only" in err


def test_a_worker_takes_the_fence_for_a_flush_of_a_thread_nobody_has() -> None:
    from breadcrumb.streams.kafka.messages import Message, decode

    key, value = fence_value(EVENTS)
    item = decode(Message(key, value, "agent-events/0/7"))
    assert item.poison is None and item.key == "__breadcrumb/log-rewrite"


def test_log_rewrite_refuses_zero_rounds_in_one_line(capsys: Any) -> None:
    from breadcrumb.cli import main

    assert main(["log", "rewrite", "--mode", "cluster", "--rounds", "0"]) == 2
    assert capsys.readouterr().err == "breadcrumb log rewrite: --rounds must be at least 1\n"


def test_survivors_leave_out_flush_markers_of_the_event_log_only() -> None:
    event = _rec(0, "u1/t1", {"event_id": "e1", "user_id": "u1", "thread_id": "t1"})
    marker = _rec(1, "u1/t1", FlushMarker("u1", "t1", "2026-12-01T10:00:00Z", "flush").to_dict())
    erased = _rec(2, "u1/t1", {"event_id": "e2", "user_id": "u1", "thread_id": "t1"})
    assert is_flush_marker(marker) and not is_flush_marker(event)
    assert survivors([event, marker, erased], {2}) == [event]
    assert survivors([event, marker, erased], {2}, DEAD_LETTERS) == [event, marker]

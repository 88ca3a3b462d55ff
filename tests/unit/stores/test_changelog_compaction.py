"""The embedded changelog (``memory_changelog``) is compacted like the topic it stands in
for: each memory's latest value is kept, in write order (issue 49)."""

from __future__ import annotations

import json
from pathlib import Path

from breadcrumb.stores.sql.lifecycle import LifecycleTables
from breadcrumb.stores.sql.migrate import SCHEMA_VERSION, stored_version
from breadcrumb.stores.sql.sqlite.store import SqliteStore


def value(mid: str, user: str, status: str, tier: str) -> dict[str, object]:
    return {"memory_id": mid, "user_id": user, "status": status, "tier": tier,
            "at": "2026-12-07T00:00:00Z", "actor": "pipeline", "reason": "test",
            "supersedes_memory_id": None, "superseded_by": None}


def test_a_memorys_new_value_replaces_its_older_ones(store: SqliteStore) -> None:
    tables = LifecycleTables.on(store.db)
    tables.open()
    log = tables.changelog
    log.append_change("m1", "alice", value("m1", "alice", "active", "provisional"), "t1")
    log.append_change("m2", "alice", value("m2", "alice", "active", "provisional"), "t2")
    log.append_change("m1", "bob", value("m1", "bob", "active", "provisional"), "t3")
    log.append_change("m1", "alice", value("m1", "alice", "active", "confirmed"), "t4")
    log.append_change("m2", "alice", None, "t5")  # a tombstone is a memory's latest value
    changes = log.read_changes()
    assert [(m, u, v and v["tier"]) for _, m, u, v in changes] == [
        ("m1", "bob", "provisional"),  # another tenant's memory of the same id is its own key
        ("m1", "alice", "confirmed"),
        ("m2", "alice", None),
    ]
    assert [seq for seq, *_ in changes] == sorted(seq for seq, *_ in changes)


def test_an_old_changelog_is_compacted_on_open(tmp_path: Path) -> None:
    """Schema 4 kept every value; opening keeps each memory's latest, in order."""
    path = tmp_path / "old.sqlite3"
    with SqliteStore(path) as old:
        LifecycleTables.on(old.db).open()
        with old.db.transaction():  # appended the schema-4 way: nothing replaced
            for mid, tier in [("m1", "provisional"), ("m2", "provisional"),
                              ("m1", "confirmed"), ("m1", "active")]:
                old.db.execute("INSERT INTO memory_changelog (memory_id, user_id, payload, at)"
                               " VALUES (?, ?, ?, ?)", (mid, "alice", f'{{"tier":"{tier}"}}',
                                                        "t"))
            old.db.execute("UPDATE schema_meta SET value = 4 WHERE name = 'version'")
    with SqliteStore(path) as again:
        assert stored_version(again.db) == SCHEMA_VERSION
        changes = LifecycleTables.on(again.db).changelog.read_changes()
        assert [(m, v and v["tier"]) for _, m, _, v in changes] == [("m2", "provisional"),
                                                                   ("m1", "active")]


def test_a_value_is_kept_compressed_and_read_back_whole(store: SqliteStore) -> None:
    """On SQLite a value's JSON is stored as a zlib stream (about 30 % smaller on the
    store-cost bench); older plain-text values still read (the test above)."""
    tables = LifecycleTables.on(store.db)
    tables.open()
    full = value("9abf0fa0-0f42-51c9-a3e9-e68d673d6837", "alice", "superseded", "provisional")
    full.update(supersedes_memory_id="f5e83859-2faa-524b-832c-8896fcc3dce6",
                superseded_by="a852c90c-4536-5607-a01b-0f91b4f2b6ff",
                reason="supersede:port:ORDERS_TIMEOUT_MS")
    tables.changelog.append_change(str(full["memory_id"]), "alice", full, "t1")
    stored, kind = store.db.fetch("SELECT payload, typeof(payload) FROM memory_changelog")[0]
    assert kind == "blob" and len(stored) < len(json.dumps(full, separators=(",", ":")))
    assert tables.changelog.read_changes()[0][3] == full

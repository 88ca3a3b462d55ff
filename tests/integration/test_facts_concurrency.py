"""Two workers writing facts at once on the real MariaDB: no deadlock (issue 13).

The old facts replace (DELETE of the memory's rows, then INSERT) took gap locks that two
transactions then both needed for their inserts: MySQL 1213 in 2 of 4 two-worker runs.
The diff write (non-locking read, delete by primary key, upsert) holds no such gap lock.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from breadcrumb.processors.supersession import FactRow
from breadcrumb.settings import Settings
from breadcrumb.stores.sql.lifecycle import LifecycleTables
from breadcrumb.stores.sql.mysql.store import MySqlStore
from tests.integration.conftest import drop_database, fresh_database

pytestmark = pytest.mark.integration


@pytest.fixture()
def stores() -> Iterator[list[tuple[MySqlStore, LifecycleTables]]]:
    name = fresh_database(uuid.uuid4().hex[:8])
    settings = Settings(mysql_database=name)
    out = []
    for _ in range(2):
        store = MySqlStore(port=settings.mysql_port, user="breadcrumb", password="breadcrumb",
                           database=name)
        store.open()
        tables = store.lifecycle_tables
        tables.open()
        store.db.execute("SET SESSION innodb_lock_wait_timeout = 10")
        out.append((store, tables))
    yield out
    for store, _tables in out:
        store.close()
    drop_database(name)


def _rows(mid: str) -> list[FactRow]:
    return [FactRow(mid, f"k{n}", f"v{n}", "2026-11-30T00:00:00Z") for n in range(3)]


def test_two_transactions_rewriting_facts_of_neighbouring_memories_do_not_deadlock(
        stores: list[tuple[MySqlStore, LifecycleTables]]) -> None:
    (s1, t1), (s2, t2) = stores
    first_cleared, second_cleared = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def run(store: MySqlStore, tables: LifecycleTables, mid: str,
            mine: threading.Event, theirs: threading.Event) -> None:
        try:
            with store.transaction():  # one message: the memory's facts written twice
                tables.facts.replace_facts("u", mid, [])
                mine.set()
                assert theirs.wait(10)
                tables.facts.replace_facts("u", mid, _rows(mid))
        except BaseException as exc:
            errors.append(exc)
            mine.set()

    a = threading.Thread(target=run, args=(s1, t1, "m1", first_cleared, second_cleared))
    b = threading.Thread(target=run, args=(s2, t2, "m2", second_cleared, first_cleared))
    a.start()
    b.start()
    a.join(30)
    b.join(30)
    assert errors == []
    facts: dict[str, Any] = {m: sorted(f.key for f in t1.facts.facts_of(m)) for m in ("m1", "m2")}
    assert facts == {"m1": ["k0", "k1", "k2"], "m2": ["k0", "k1", "k2"]}

    # rewriting keeps the rows of kept keys and drops the others
    t1.facts.replace_facts("u", "m1", _rows("m1")[1:])
    assert sorted(f.key for f in t1.facts.facts_of("m1")) == ["k1", "k2"]


def test_a_users_transactions_in_two_workers_run_one_after_the_other(
        stores: list[tuple[MySqlStore, LifecycleTables]]) -> None:
    """``serialized``: the second worker's block for the same user starts only after the
    first committed, and reads what the first wrote (its snapshot starts after the wait);
    another user is not held."""
    (s1, t1), (s2, t2) = stores
    inside, seen = threading.Event(), []

    def second() -> None:
        with s2.serialized(["u"]), s2.transaction():
            seen.append([f.memory_id for f in t2.facts.facts_in_any_state("u", ["k0"])])

    with s1.serialized(["u", "other"]), s1.transaction():
        t1.facts.replace_facts("u", "m1", _rows("m1"))
        thread = threading.Thread(target=second)
        thread.start()
        third = MySqlStore(port=s1.db.port, user="breadcrumb", password="breadcrumb",
                           database=s1.db.database)
        third.open()
        try:
            with third.serialized(["someone-else"]):
                inside.set()  # not held by the first worker's users
        finally:
            third.close()
        thread.join(1.5)
        assert thread.is_alive() and not seen  # waiting for the first worker's commit
    thread.join(30)
    assert inside.is_set() and seen == [["m1"]]

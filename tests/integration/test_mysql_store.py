"""MySqlStore against the real MariaDB (infra/services.sh), database ``breadcrumb_test``.

Runs every test of :class:`StoreContract` (the same bodies as the SQLite unit tests) plus
MySQL-only behaviour. Tables are dropped and recreated once per module and emptied before
each test. Port from ``BREADCRUMB_MYSQL_PORT`` (default 3306).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pymysql
import pytest

from breadcrumb.stores.sql.base import SqlStore
from breadcrumb.stores.sql.migrate import SCHEMA_VERSION
from breadcrumb.stores.sql.mysql.store import MySqlStore
from breadcrumb.stores.sql.schema import TABLE_NAMES
from tests.integration.conftest import drop_database, fresh_database
from tests.unit.stores.test_chunk_text import ChunkTextContract
from tests.unit.stores.test_sqlite_store import StoreContract, ev

pytestmark = pytest.mark.integration


def _params() -> dict[str, Any]:
    return {
        "host": os.environ.get("BREADCRUMB_MYSQL_HOST", "127.0.0.1"),
        "port": int(os.environ.get("BREADCRUMB_MYSQL_PORT", "3306")),
        "user": os.environ.get("BREADCRUMB_MYSQL_USER", "breadcrumb"),
        "password": os.environ.get("BREADCRUMB_MYSQL_PASSWORD", "breadcrumb"),
        "database": "breadcrumb_test",
    }


@pytest.fixture(scope="module")
def fresh_schema() -> Iterator[dict[str, Any]]:
    """A throw-away database for this module (helpers running in parallel share the
    server), its tables created once."""
    params = {**_params(), "database": fresh_database(uuid.uuid4().hex[:8])}
    store = MySqlStore(**params)
    store.open()
    store.close()
    try:
        yield params
    finally:
        drop_database(params["database"])


def _empty_tables(params: dict[str, Any]) -> None:
    conn = pymysql.connect(**params, autocommit=False)
    try:
        with conn.cursor() as cur:
            for name in TABLE_NAMES:
                cur.execute(f"DELETE FROM {name}")
        conn.commit()
    finally:
        conn.close()


class TestMySqlStore(StoreContract, ChunkTextContract):
    """The backend contract on MariaDB, plus MySQL-only behaviour."""

    @pytest.fixture
    def make_store(self, fresh_schema: dict[str, Any]) -> Callable[[], SqlStore]:
        _empty_tables(fresh_schema)
        return lambda: MySqlStore(**fresh_schema)

    def test_ids_are_stored_as_exact_bytes(self, store: SqlStore) -> None:
        assert store.db.read("SELECT @@session.sql_mode")[0][0].startswith("STRICT_ALL_TABLES")
        store.events.put_event(ev("Ünïcode ユーザー", "スレッド 1", 0, "ｅｖｅｎｔ"))
        got = store.events.get_event("Ünïcode ユーザー", "ｅｖｅｎｔ")
        assert got is not None and got.thread_id == "スレッド 1"
        assert store.events.get_event("ünïcode ユーザー", "ｅｖｅｎｔ") is None

    def test_texts_with_every_escaped_character_come_back_as_written(
            self, store: SqlStore) -> None:
        text = "a\\b \\\\n \0 NUL \n \r \032 \" ' '' \\' ; -- é 日本"  # backslashes, quotes, ...
        events = [ev("alice", "t1", i, content=text * (i + 1)) for i in range(3)]
        store.events.put_event(events[0])
        store.events.put_events(events[1:])  # one multi-row statement
        assert [e.content for e in store.events.get_range("alice", "t1", 0, 9)] == \
            [text, text * 2, text * 3]

    def test_reconnects_after_the_server_kills_the_connection(self, store: SqlStore) -> None:
        store.events.put_event(ev("alice", "t1", 0))
        _kill(store)
        assert store.events.count_events() == 1  # stand-alone read reconnects
        _kill(store)
        with store.transaction():  # a transaction begins on a fresh connection
            store.events.put_event(ev("alice", "t1", 1))
        assert [e.index for e in store.events.get_range("alice", "t1", 0, 9)] == [0, 1]

    def test_connection_lost_inside_a_transaction_raises_and_rolls_back(
            self, store: SqlStore) -> None:
        with pytest.raises(pymysql.err.OperationalError), store.transaction():
            store.events.put_event(ev("alice", "t1", 0))
            _kill(store)
            store.events.put_event(ev("alice", "t1", 1))
        assert store.events.count_events() == 0


def _kill(store: SqlStore) -> None:
    """KILL the store's server-side connection from another connection."""
    thread_id = store.db._conn.thread_id()
    conn = pymysql.connect(**{**_params(), "database": None}, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("KILL %s", (thread_id,))
    finally:
        conn.close()



def test_a_worker_losing_the_schema_version_race_still_opens() -> None:
    """Workers started at once open a fresh database together (seen: 1 of 3 ``breadcrumb
    worker`` processes died on "Duplicate entry 'version'"). Made deterministic: another
    opener records the version right after this one found none (DDL commits implicitly,
    so the check and the INSERT are not one transaction); this one must still open."""
    params = {**_params(), "database": fresh_database(uuid.uuid4().hex[:8])}
    store = MySqlStore(**params)
    real = store.db.fetch

    def racing(sql: str, args: Any = ()) -> Any:
        rows = real(sql, args)
        if sql.startswith("SELECT 1 FROM schema_meta") and not rows:
            other = pymysql.connect(**params, autocommit=True)  # the other worker wins
            try:
                with other.cursor() as cur:
                    cur.execute("INSERT INTO schema_meta (name, value) VALUES ('version', "
                                f"{SCHEMA_VERSION})")
            finally:
                other.close()
        return rows
    store.db.fetch = racing  # type: ignore[method-assign]
    try:
        store.open()
        assert store.db._conn is not None
        (version,), = real("SELECT value FROM schema_meta WHERE name = 'version'")
        assert int(version) == SCHEMA_VERSION
    finally:
        store.close()
        drop_database(params["database"])

"""Schema versions of the SQL stores and the steps that upgrade old data in place.

``schema_meta`` holds ``version``. :func:`upgrade` runs inside ``SqlStore.open()``'s
transaction, after the tables exist, and applies every step above the stored version:

* **2** (issue 12) -- thread keys escape ``%`` and ``/`` in the user id
  (``topics.records.thread_key``): ``thread_state.state_key`` and ``event_log.thread_key``
  are recomputed from the ids each row carries. Only keys that hold a ``%`` or two ``/``
  can change, so the step reads just those rows.
* **3** (issue 49) -- a chunk's text is stored once, in its raw event: each
  ``source_chunks`` row whose text is its event's slice at its offsets becomes a view
  (``stores.sql.chunk_text``), read back the same. SQLite only, in slices of
  :data:`CHUNK_SLICE` rows; the freed pages are reused by later writes (``VACUUM`` gives
  them back to the file system). A MySQL/TiDB database keeps its old rows whole (still read
  the same: one transaction over every chunk of a cluster is too big for TiDB); its new
  chunks are views.
* **4** (issue 49) -- an event's text is stored once, in the embedded log: ``raw_events``
  gets a ``log_seq`` column, and each row whose log entry (same user, same event id, same
  file) holds its content becomes a view into it (``stores.sql.log_text``), read back the
  same. SQLite only, in slices of :data:`CHUNK_SLICE` rows (freed pages as in step 3); a
  MySQL/TiDB database is left as it is (cluster mode's log is Kafka: its ``raw_events``
  rows are the one SQL copy).
* **5** (issue 49) -- ``thread_state`` is kept in key order (``WITHOUT ROWID``): a thread's
  row grows while its window is open and shrinks when it closes, and in rowid order the
  space given back was never reused (a million-event data dir: 104 MB, 84 MB of it empty
  page space). SQLite only: the rows are copied into the new table, the old one dropped
  (its pages reused by later writes). MySQL/TiDB keep rows in key order already. And the
  embedded changelog (``memory_changelog``) is compacted once: the latest value of each
  memory kept (new values replace older ones as they are written from then on).
* **6** (issue 49) -- the embedded log indexes only its entries not processed yet (a
  partial index, ``pending_event_log_seq``): the ``(processed, seq)`` index that held every
  entry is dropped (14 MB at a million events). SQLite only.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any, Protocol

from breadcrumb.stores.sql import log_text
from breadcrumb.stores.sql.chunk_text import VIEW, is_slice
from breadcrumb.stores.sql.packed import unpack
from breadcrumb.stores.sql.schema import TABLES, Dialect, without_rowid
from breadcrumb.topics.records import thread_key

log = logging.getLogger(__name__)

SCHEMA_VERSION = 6
#: chunk rows (step 3) / event rows (step 4) read per statement, each with its text
CHUNK_SLICE = 2000
#: Keys an escaped user id can change: a ``%`` anywhere, or at least two ``/``
#: (patterns are parameters: pymysql would read a literal ``%`` as a placeholder).
_MAYBE_OLD = "{col} LIKE ? OR {col} LIKE ? ESCAPE '!'"
_PATTERNS = ("%/%/%", "%!%%")


class _Sql(Protocol):
    """The statements an upgrade runs (``stores.sql.core.SqlDatabase``, in its transaction)."""

    dialect: Dialect

    def fetch(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...

    def execute(self, sql: str, params: Any = ()) -> int: ...

    def insert_unique(self, sql: str, params: Any) -> bool: ...

    def execute_many(self, sql: str, rows: Any) -> None: ...


def stored_version(store: _Sql) -> int:
    """The schema version of the open database (1 when never recorded)."""
    rows = store.fetch("SELECT value FROM schema_meta WHERE name = ?", ("version",))
    return int(rows[0][0]) if rows else 1


def upgrade(store: _Sql) -> int:
    """Bring the database to :data:`SCHEMA_VERSION`; returns the version found."""
    found = stored_version(store)
    if found >= SCHEMA_VERSION:
        return found
    if found < 2:
        moved = _escape_thread_keys(store)
        # a fresh database has nothing to rewrite: no line at start-up
        log.log(logging.INFO if moved else logging.DEBUG,
                "schema 1 -> 2: %s thread keys rewritten", moved)
    if found < 3 and not store.dialect.mysql:
        views = _chunks_as_views(store)
        log.log(logging.INFO if views else logging.DEBUG,
                "schema %s -> 3: %s chunk texts now read from their events", found, views)
    if found < 4 and not store.dialect.mysql:
        moved = log_text.events_as_views(store, CHUNK_SLICE)
        log.log(logging.INFO if moved else logging.DEBUG,
                "schema %s -> 4: %s event texts now read from the log", found, moved)
    if found < 5 and not store.dialect.mysql:
        moved, dropped = _states_by_key(store), _compact_changelog(store)
        log.log(logging.INFO if moved or dropped else logging.DEBUG,
                "schema %s -> 5: %s thread states now kept in key order, %s older changelog "
                "values compacted away", found, moved, dropped)
    if found < 6 and not store.dialect.mysql:
        store.execute("DROP INDEX IF EXISTS ix_event_log_processed_seq")
    if found == 1 and not store.fetch("SELECT 1 FROM schema_meta WHERE name = ?", ("version",)):
        # Workers started together open a fresh database at once: the INSERT of the one
        # that loses the race hits the winner's row (the steps are idempotent): no crash.
        store.insert_unique("INSERT INTO schema_meta (name, value) VALUES (?, ?)",
                             ("version", SCHEMA_VERSION))
    else:
        store.execute("UPDATE schema_meta SET value = ? WHERE name = ?",
                       (SCHEMA_VERSION, "version"))
    return found


def _escape_thread_keys(store: _Sql) -> int:
    moved = 0
    rows = store.fetch("SELECT state_key, state FROM thread_state WHERE "
                        + _MAYBE_OLD.format(col="state_key"), _PATTERNS)
    for old, state in rows:
        old_key = _text(old)
        data = json.loads(_text(state))
        if not _ids(data):
            continue
        new_key = thread_key(data["user_id"], data["thread_id"])
        if new_key == old_key:
            continue
        if store.fetch("SELECT 1 FROM thread_state WHERE state_key = ?", (new_key,)):
            log.warning("thread key %r: %r already exists, left as is", old_key, new_key)
            continue
        store.execute("UPDATE thread_state SET state_key = ? WHERE state_key = ?",
                       (new_key, old_key))
        moved += 1
    rows = store.fetch("SELECT seq, thread_key, payload FROM event_log WHERE "
                        + _MAYBE_OLD.format(col="thread_key"), _PATTERNS)
    for seq, old, payload in rows:
        entry = json.loads(unpack(payload))
        if not _ids(entry):
            continue
        new_key = thread_key(entry["user_id"], entry["thread_id"])
        if new_key != _text(old):
            store.execute("UPDATE event_log SET thread_key = ? WHERE seq = ?", (new_key, seq))
            moved += 1
    return moved


def _chunks_as_views(store: _Sql) -> int:
    """Step 3 (SQLite): rows whose text is their event's slice keep only the offsets."""
    done, after = 0, 0
    while True:
        rows = store.fetch(
            "SELECT c.rowid, c.char_start, c.char_end, c.text, e.content FROM source_chunks c "
            "LEFT JOIN raw_events e ON e.user_id = c.user_id AND e.event_id = c.event_id "
            "WHERE c.rowid > ? AND c.text <> ? ORDER BY c.rowid LIMIT ?",
            (after, VIEW, CHUNK_SLICE))
        if not rows:
            return done
        after = int(rows[-1][0])
        views = [(int(r[0]),) for r in rows
                 if is_slice(r[4], int(r[1]), int(r[2]), str(r[3]))]
        if views:
            store.execute_many("UPDATE source_chunks SET text = ? WHERE rowid = ?",
                               [(VIEW, rowid) for (rowid,) in views])
            done += len(views)


def _table_sql(store: _Sql, name: str) -> str | None:
    """The ``CREATE TABLE`` statement of a SQLite table, None when there is no such table."""
    found = store.fetch("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?",
                        (name,))
    return str(found[0][0]) if found else None


def _states_by_key(store: _Sql) -> int:
    """Step 5 (SQLite): ``thread_state`` rebuilt ``WITHOUT ROWID``; the rows copied."""
    sql = _table_sql(store, "thread_state")
    if sql is None or without_rowid(sql):
        return 0
    table = next(t for t in TABLES if t.name == "thread_state")
    columns = ", ".join(c.name for c in table.columns)
    create = store.dialect.create_table(replace(table, name="thread_state_by_key"))[0]
    store.execute(create)
    moved = store.execute(f"INSERT INTO thread_state_by_key ({columns}) "
                          f"SELECT {columns} FROM thread_state")
    store.execute("DROP TABLE thread_state")  # its indexes with it
    store.execute("ALTER TABLE thread_state_by_key RENAME TO thread_state")
    for stmt in store.dialect.create_table(table)[1:]:  # the indexes, under their names
        store.execute(stmt)
    return moved


def _compact_changelog(store: _Sql) -> int:
    """Step 5 (SQLite): every value of ``memory_changelog`` but each memory's latest leaves
    it (none when the table is not there yet: the lifecycle tables come later)."""
    if _table_sql(store, "memory_changelog") is None:
        return 0
    return store.execute("DELETE FROM memory_changelog WHERE seq NOT IN (SELECT MAX(seq) "
                         "FROM memory_changelog GROUP BY user_id, memory_id)")


def _ids(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("user_id"), str) \
        and isinstance(data.get("thread_id"), str)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)

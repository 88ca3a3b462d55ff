"""Schema versions of the SQL stores and the steps that upgrade old data in place.

``schema_meta`` holds ``version``. :func:`upgrade` runs inside ``SqlStore.open()``'s
transaction, after the tables exist, and applies every step above the stored version:

* **2** (issue 12) -- thread keys escape ``%`` and ``/`` in the user id
  (``topics.records.thread_key``): ``thread_state.state_key`` and ``event_log.thread_key``
  are recomputed from the ids each row carries. Only keys that hold a ``%`` or two ``/``
  can change, so the step reads just those rows.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Protocol

from breadcrumb.topics.records import thread_key

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
#: Keys an escaped user id can change: a ``%`` anywhere, or at least two ``/``
#: (patterns are parameters: pymysql would read a literal ``%`` as a placeholder).
_MAYBE_OLD = "{col} LIKE ? OR {col} LIKE ? ESCAPE '!'"
_PATTERNS = ("%/%/%", "%!%%")


class _Sql(Protocol):
    """The statements an upgrade runs (``stores.sql.core.SqlDatabase``, in its transaction)."""

    def fetch(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...

    def execute(self, sql: str, params: Any = ()) -> int: ...

    def insert_unique(self, sql: str, params: Any) -> bool: ...


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
        entry = json.loads(_text(payload))
        if not _ids(entry):
            continue
        new_key = thread_key(entry["user_id"], entry["thread_id"])
        if new_key != _text(old):
            store.execute("UPDATE event_log SET thread_key = ? WHERE seq = ?", (new_key, seq))
            moved += 1
    return moved


def _ids(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("user_id"), str) \
        and isinstance(data.get("thread_id"), str)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)

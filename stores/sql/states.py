"""Thread state of a SQL store (``ThreadStateStore``, :mod:`stores.ports`): each thread's
segmenter state by its key, with the count of events in its open window."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import SqlDatabase


class SqlThreadStates:
    """The ``thread_state`` table: ``ThreadStateStore`` and ``OpenWindowStates``
    (:mod:`stores.ports`), many keys at once, and the open windows' event count."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    def get_state(self, key: str) -> dict[str, Any] | None:
        """The segmenter state of a thread key, or None."""
        rows = self.db.read("SELECT state FROM thread_state WHERE state_key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def put_state(self, key: str, state: dict[str, Any]) -> None:
        """Replace the state; ``pending_count`` = ``len(state["pending"])`` (0 if absent)."""
        pending = len(state.get("pending") or ())
        now = datetime.now(UTC).isoformat()  # bookkeeping only, not part of any record
        sql = self.db.dialect.upsert("thread_state", ("state_key", "state", "pending_count",
                                  "updated_at"), ("state_key",),
                                  ("state", "pending_count", "updated_at"))
        with self.db.transaction():
            self.db.execute(sql, (key, s.dumps(state), pending, now))

    def get_states(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Issue 14: the states of many thread keys in one statement (absent keys left out)."""
        wanted = list(dict.fromkeys(keys))
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start:start + 500]
            rows = self.db.read("SELECT state_key, state FROM thread_state WHERE state_key IN "
                              f"({s.marks(len(part))})", part)
            out.update((str(k), json.loads(v)) for k, v in rows)
        return out

    def put_states(self, states: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Issue 14: :meth:`put_state` for many keys in one statement."""
        if not states:
            return
        now = datetime.now(UTC).isoformat()
        sql = self.db.dialect.upsert("thread_state", ("state_key", "state", "pending_count",
                                  "updated_at"), ("state_key",),
                                  ("state", "pending_count", "updated_at"))
        with self.db.transaction():
            self.db.execute_many(sql, [(key, s.dumps(state), len(state.get("pending") or ()), now)
                                     for key, state in states])

    def list_states(self, pending_only: bool = True) -> list[tuple[str, dict[str, Any]]]:
        """(key, state) of every thread, or only those with pending events; by key."""
        where = " WHERE pending_count > 0" if pending_only else ""
        rows = self.db.read(f"SELECT state_key, state FROM thread_state{where} ORDER BY state_key")
        return [(str(k), json.loads(v)) for k, v in rows]

    def list_open_states(self, user_id: str) -> list[tuple[str, dict[str, Any]]]:
        """(key, state) of one tenant's threads with events in their open window.

        A range over the key (``{user_id}/…``), not a scan of every tenant's windows;
        keys of another user that happen to share the prefix are left to the caller's
        ``state["user_id"]`` check."""
        rows = self.db.read("SELECT state_key, state FROM thread_state WHERE state_key >= ? "
                          "AND state_key < ? AND pending_count > 0",
                          (f"{user_id}/", f"{user_id}0"))  # "0" is the character after "/"
        return [(str(k), json.loads(v)) for k, v in rows]

    def count_pending_window_events(self) -> int:
        """Events waiting in open windows, summed over all threads."""
        return self.db.scalar("SELECT SUM(pending_count) FROM thread_state")

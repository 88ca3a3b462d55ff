"""The state half of the SQL stores: thread state, the embedded event log, counters.

Mixed into :class:`stores.sql.base.SqlStore`; :class:`~stores.sql.core.SqlCore` supplies
``_read``, ``_execute``, ``_scalar``, ``_insert_unique``, ``transaction`` and ``dialect``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import SqlCore

#: One item for ``append_log``: (user_id, event_id, thread_key, payload_json).
LogItem = tuple[str | None, str | None, str, str]


class LogStateMixin(SqlCore):
    """ThreadStateStore, the event log (the embedded runner's durable inbox) and counters.

    Why so many methods: thread states, the embedded event log and the counters are
    three small tables that a batch writes in the store's one transaction (states, log
    marks and counters commit together); each method is one statement.
    """

    # --- ThreadStateStore --------------------------------------------------------------------

    def get_state(self, key: str) -> dict[str, Any] | None:
        """The segmenter state of a thread key, or None."""
        rows = self._read("SELECT state FROM thread_state WHERE state_key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def put_state(self, key: str, state: dict[str, Any]) -> None:
        """Replace the state; ``pending_count`` = ``len(state["pending"])`` (0 if absent)."""
        pending = len(state.get("pending") or ())
        now = datetime.now(UTC).isoformat()  # bookkeeping only, not part of any record
        sql = self.dialect.upsert("thread_state", ("state_key", "state", "pending_count",
                                  "updated_at"), ("state_key",),
                                  ("state", "pending_count", "updated_at"))
        with self.transaction():
            self._execute(sql, (key, s.dumps(state), pending, now))

    def get_states(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Issue 14: the states of many thread keys in one statement (absent keys left out)."""
        wanted = list(dict.fromkeys(keys))
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start:start + 500]
            rows = self._read("SELECT state_key, state FROM thread_state WHERE state_key IN "
                              f"({s.marks(len(part))})", part)
            out.update((str(k), json.loads(v)) for k, v in rows)
        return out

    def put_states(self, states: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Issue 14: :meth:`put_state` for many keys in one statement."""
        if not states:
            return
        now = datetime.now(UTC).isoformat()
        sql = self.dialect.upsert("thread_state", ("state_key", "state", "pending_count",
                                  "updated_at"), ("state_key",),
                                  ("state", "pending_count", "updated_at"))
        with self.transaction():
            self._execute_many(sql, [(key, s.dumps(state), len(state.get("pending") or ()), now)
                                     for key, state in states])

    def list_states(self, pending_only: bool = True) -> list[tuple[str, dict[str, Any]]]:
        """(key, state) of every thread, or only those with pending events; by key."""
        where = " WHERE pending_count > 0" if pending_only else ""
        rows = self._read(f"SELECT state_key, state FROM thread_state{where} ORDER BY state_key")
        return [(str(k), json.loads(v)) for k, v in rows]

    def list_open_states(self, user_id: str) -> list[tuple[str, dict[str, Any]]]:
        """(key, state) of one tenant's threads with events in their open window.

        A range over the key (``{user_id}/…``), not a scan of every tenant's windows;
        keys of another user that happen to share the prefix are left to the caller's
        ``state["user_id"]`` check."""
        rows = self._read("SELECT state_key, state FROM thread_state WHERE state_key >= ? "
                          "AND state_key < ? AND pending_count > 0",
                          (f"{user_id}/", f"{user_id}0"))  # "0" is the character after "/"
        return [(str(k), json.loads(v)) for k, v in rows]

    def count_pending_window_events(self) -> int:
        """Events waiting in open windows, summed over all threads."""
        return self._scalar("SELECT SUM(pending_count) FROM thread_state")

    # --- event_log (the embedded runner's durable inbox) -------------------------------------

    def append_log(self, payloads: Sequence[LogItem]) -> list[bool]:
        """Append (user_id, event_id, thread_key, payload_json) items in ONE transaction.

        Per item True if appended, False if that (user_id, event_id) is already in the log
        (also within this batch). Items whose event_id is None always append.
        """
        now = datetime.now(UTC).isoformat()
        with self.transaction():
            return [self._insert_unique(s.INSERT_LOG, (u, e, k, p, now)) for u, e, k, p in payloads]

    def read_log_all(self, after_seq: int, limit: int) -> list[tuple[int, str]]:
        """Every (seq, payload) with seq > after_seq, processed or not (replay reads this)."""
        rows = self._read("SELECT seq, payload FROM event_log WHERE seq > ? ORDER BY seq LIMIT ?",
                          (after_seq, limit))
        return [(int(q), str(p)) for q, p in rows]

    def read_log_keys(self, after_seq: int, limit: int) -> list[tuple[int, str, str]]:
        """(seq, thread_key, accepted_at) of entries with seq > after_seq, in seq order,
        without their payloads (the embedded runner's fair scheduler reads ahead with this)."""
        rows = self._read("SELECT seq, thread_key, accepted_at FROM event_log WHERE seq > ? "
                          "ORDER BY seq LIMIT ?", (after_seq, limit))
        return [(int(q), str(k), str(a)) for q, k, a in rows]

    def read_log_entries(self, seqs: Sequence[int]) -> dict[int, str]:
        """The payloads of the given log positions, by position."""
        out: dict[int, str] = {}
        for start in range(0, len(seqs), 500):
            part = list(seqs[start:start + 500])
            marks = ",".join("?" * len(part))
            rows = self._read(f"SELECT seq, payload FROM event_log WHERE seq IN ({marks})", part)
            out.update((int(q), str(p)) for q, p in rows)
        return out

    def max_log_seq(self) -> int:
        """The newest log position (0 for an empty log)."""
        return self._scalar("SELECT MAX(seq) FROM event_log")

    def read_log(self, after_seq: int, limit: int) -> list[tuple[int, str]]:
        """Unprocessed (seq, payload) with seq > after_seq, in seq order."""
        rows = self._read("SELECT seq, payload FROM event_log WHERE processed = 0 AND seq > ? "
                          "ORDER BY seq LIMIT ?", (after_seq, limit))
        return [(int(q), str(p)) for q, p in rows]

    def mark_processed(self, seq: int) -> None:
        """Flag one log entry as processed."""
        with self.transaction():
            self._execute("UPDATE event_log SET processed = 1 WHERE seq = ?", (seq,))

    def mark_processed_many(self, seqs: Sequence[int]) -> None:
        """Flag many log entries as processed, in one statement."""
        if not seqs:
            return
        with self.transaction():
            self._execute_many("UPDATE event_log SET processed = 1 WHERE seq = ?",
                               [(seq,) for seq in seqs])

    def count_unprocessed(self) -> int:
        """Log entries not yet processed."""
        return self._scalar("SELECT COUNT(*) FROM event_log WHERE processed = 0")

    def count_log(self) -> int:
        """All log entries."""
        return self._scalar("SELECT COUNT(*) FROM event_log")

    # --- kv_counters -------------------------------------------------------------------------

    def incr(self, name: str, n: int = 1) -> None:
        """Add ``n`` to a named counter (created at 0)."""
        sql = self.dialect.upsert("kv_counters", ("name", "value"), ("name",), add=("value",))
        with self.transaction():
            self._execute(sql, (name, n))

    def incr_many(self, counts: Mapping[str, int]) -> None:
        """Issue 14: :meth:`incr` for many counters in one statement (in name order, so two
        writers lock the rows in the same order)."""
        rows = [(name, n) for name, n in sorted(counts.items()) if n]
        if rows:
            sql = self.dialect.upsert("kv_counters", ("name", "value"), ("name",), add=("value",))
            with self.transaction():
                self._execute_many(sql, rows)

    def set_counter(self, name: str, value: int) -> None:
        """Set a named counter (e.g. a generation's ``applied_seq`` cursor into the log)."""
        sql = self.dialect.upsert("kv_counters", ("name", "value"), ("name",), ("value",))
        with self.transaction():
            self._execute(sql, (name, value))

    def drop_counters(self, names: Sequence[str]) -> None:
        """Remove named counters (absent names are ignored)."""
        with self.transaction():
            for name in names:
                self._execute("DELETE FROM kv_counters WHERE name = ?", (name,))

    def max_processed_seq(self) -> int:
        """The newest log position flagged processed (0 when none)."""
        return self._scalar("SELECT MAX(seq) FROM event_log WHERE processed = 1")

    def count_log_after(self, seq: int, thread_key: str | None = None) -> int:
        """Log entries after position ``seq`` (what a generation has not applied yet), of
        one thread when ``thread_key`` is given."""
        if thread_key is None:
            return self._scalar("SELECT COUNT(*) FROM event_log WHERE seq > ?", (seq,))
        return self._scalar("SELECT COUNT(*) FROM event_log WHERE seq > ? AND thread_key = ?",
                            (seq, thread_key))

    def get_counters(self) -> dict[str, int]:
        """Every counter by name."""
        return {str(k): int(v) for k, v in self._read("SELECT name, value FROM kv_counters")}

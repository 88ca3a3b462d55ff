"""Thread state for the embedded store, kept as committed JSON text between batches.

The fair runner spreads a batch over a few hundred threads (one or two entries each), so
the per-batch write-back (``streams.state.WriteBackStates``) still read and wrote one state
per entry: a ``SELECT`` and an upsert each (~11 µs and ~10 µs of statement overhead, 13,080
statements for 6,000 events in ``bench.derive``). Here a state's committed JSON text is
remembered by key (one process owns a data dir, and every write of ``thread_state`` goes
through this class), so a read decodes that text instead of running a ``SELECT``; and the
upserts of one transaction are written with ONE ``executemany`` just before it commits.

Exactness: a read returns the decoded value of the same text the row holds, a fresh dict
each time. The text is orjson's (``_state_json``): for the str / int / None / list values of
a thread state (``ThreadState.to_dict``) byte for byte ``sql_schema.dumps``'s (checked over
every code point in the tests), at a fraction of the stdlib encoder's cost; a value orjson
refuses (an int beyond 64 bits, a lone surrogate, a non-str key) goes through
``sql_schema.dumps`` as before, and a text orjson cannot read through ``json.loads``.
Texts enter the cache only when their transaction commits (a rolled-back batch leaves it
as it was); inside a transaction a read sees that transaction's own writes first.
Before any read of the table in SQL the staged rows are written, so SQL readers see them
too. The rows written are the same rows, in the same order, as one upsert per call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import SqlDatabase
from breadcrumb.stores.sql.sqlite.database import TransactionListener
from breadcrumb.stores.sql.states import SqlThreadStates

StagedRow = tuple[str, str, int, str]  # (state_key, state json, pending_count, updated_at)
#: Committed texts kept at most (a long-running server with many threads): cleared, not
#: evicted one by one, when reached; a miss only costs the SELECT it used to.
STATE_CACHE_MAX = 20_000


class SqliteThreadStates(SqlThreadStates, TransactionListener):
    """``ThreadStateStore`` over the SQL one of :class:`~stores.sql.states.SqlThreadStates`
    with the committed texts kept, and the transaction's rows written at its commit (the
    database tells it: :class:`~stores.sql.sqlite.database.TransactionListener`)."""

    def __init__(self, db: SqlDatabase) -> None:
        super().__init__(db)
        self._state_text: dict[str, str] = {}  # committed JSON text by state key
        self._state_tx: dict[str, StagedRow] = {}  # written in the open transaction
        self._state_unwritten: dict[str, StagedRow] = {}  # of those, not in SQL yet

    # --- reads -----------------------------------------------------------------------------

    def get_state(self, key: str) -> dict[str, Any] | None:
        """The segmenter state of a thread key, or None. A thread outside the writer's
        lock reads the committed state and leaves the cache as it is (``stores.sql.sqlite.readers``:
        a text it read could be older than one committed meanwhile)."""
        if not self.db.writer_owned():
            text = self._state_text.get(key)
            if text is None:
                rows = self.db.read("SELECT state FROM thread_state WHERE state_key = ?", (key,))
                if not rows:
                    return None
                text = str(rows[0][0])
            return _state_value(text)
        with self.db.lock:
            staged = self._state_tx.get(key)
            text = staged[1] if staged is not None else self._state_text.get(key)
            if text is None:
                rows = self.db.read("SELECT state FROM thread_state WHERE state_key = ?", (key,))
                if not rows:
                    return None
                text = str(rows[0][0])  # committed: this transaction's rows are staged
                self._remember(key, text)
        return _state_value(text)

    def get_states(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not self.db.writer_owned():  # committed rows, the writer not waited for
            return super().get_states(keys)
        with self.db.lock:
            self._write_staged_states()
            return super().get_states(keys)

    def list_states(self, pending_only: bool = True) -> list[tuple[str, dict[str, Any]]]:
        if not self.db.writer_owned():  # committed rows, the writer not waited for
            return super().list_states(pending_only)
        with self.db.lock:
            self._write_staged_states()
            return super().list_states(pending_only)

    def list_open_states(self, user_id: str) -> list[tuple[str, dict[str, Any]]]:
        if not self.db.writer_owned():  # committed rows, the writer not waited for
            return super().list_open_states(user_id)
        with self.db.lock:
            self._write_staged_states()
            return super().list_open_states(user_id)

    def count_pending_window_events(self) -> int:
        if not self.db.writer_owned():  # committed rows, the writer not waited for
            return super().count_pending_window_events()
        with self.db.lock:
            self._write_staged_states()
            return super().count_pending_window_events()

    # --- writes ----------------------------------------------------------------------------

    def put_state(self, key: str, state: dict[str, Any]) -> None:
        """Replace the state; ``pending_count`` = ``len(state["pending"])`` (0 if absent).
        Written to SQL with the transaction's other states, before it commits."""
        self.put_states([(key, state)])

    def put_states(self, states: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """:meth:`put_state` for many keys (one statement at the commit)."""
        if not states:
            return
        now = datetime.now(UTC).isoformat()  # bookkeeping only, not part of any record
        with self.db.transaction():
            for key, state in states:
                row = (key, _state_json(state), len(state.get("pending") or ()), now)
                self._state_tx[key] = row
                self._state_unwritten[key] = row  # a key written twice keeps its place

    def before_commit(self) -> None:
        self._write_staged_states()

    def _write_staged_states(self) -> None:
        """Upsert the staged rows now (one statement); before the commit and readers."""
        rows, self._state_unwritten = list(self._state_unwritten.values()), {}
        if rows:
            sql = self.db.dialect.upsert("thread_state", ("state_key", "state", "pending_count",
                                      "updated_at"), ("state_key",),
                                      ("state", "pending_count", "updated_at"))
            self.db.execute_many(sql, rows)

    def committed(self) -> None:
        """The transaction committed: its states are now the committed ones."""
        for key, row in self._state_tx.items():
            self._remember(key, row[1])
        self._state_tx = {}

    def rolled_back(self) -> None:
        """The transaction rolled back: forget its states (the cache keeps the committed)."""
        self._state_tx, self._state_unwritten = {}, {}

    def reset(self) -> None:
        """The connection closed or the tables were dropped: nothing is known any more."""
        self._state_text.clear()
        self.rolled_back()

    def _remember(self, key: str, text: str) -> None:
        if len(self._state_text) >= STATE_CACHE_MAX and key not in self._state_text:
            self._state_text.clear()
        self._state_text[key] = text


def _state_json(state: dict[str, Any]) -> str:
    """The JSON text of a state: ``sql_schema.dumps``'s text (see the module docstring)."""
    try:
        return orjson.dumps(state).decode()
    except TypeError:  # orjson.JSONEncodeError: what the stdlib encoder still takes
        return s.dumps(state)


def _state_value(text: str) -> Any:
    """The value of a state's JSON text (``json.loads``'s)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN / Infinity or an int beyond 64 bits
        return json.loads(text)

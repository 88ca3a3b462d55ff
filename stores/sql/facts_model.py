"""Issue 14: the ``memory_facts`` rows a derivation batch's hooks touch, read once and
written at the batch's end.

:class:`BatchFacts` stands behind :class:`~stores.sql.facts_batch.BatchedLifecycleTables`
for one batch (one thread, one SQL transaction) on MySQL / MariaDB / TiDB. The hooks read
facts by key (``current_facts``, ``facts_in_any_state``) and by memory
(``fact_states_of``); a key of a user is read once with every row of the memories holding
it (one statement), so that those memories are known whole. The batch's writes
(``replace_facts``, ``mark_fact``) change the kept rows; :meth:`BatchFacts.flush` writes
the rows that changed: one upsert for those that are there, a DELETE by primary key for
each that is gone (never a range DELETE: see ``LifecycleTables.replace_facts``).

The rows read are kept by key and by memory (sets; what the hooks get is sorted), so the
order a read returns them in does not matter. A memory's status (what ``current_facts``
filters on) is the one its kept row or a status change of the batch gives, else the one
read with its facts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from breadcrumb.processors.supersession import FactRow
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import SqlDatabase, id_text
from breadcrumb.stores.sql.facts import FACT_COLUMNS, MAX_KEY_BYTES

_LIVE = ("active", "conflicted")
Values = tuple[str, str, str, str]  # user_id, value, ts, state


class BatchFacts:
    """``memory_facts`` of one batch (see the module docstring).

    Why so many methods: the fact-table half of BatchedLifecycleTables: the public
    methods mirror LifecycleTables' fact reads and writes, the private ones keep the
    rows read by key and by memory in step, so one batch reads each key once and writes
    once.
    """

    def __init__(self, db: SqlDatabase,
                 kept_row: Callable[[str, str], dict[str, Any] | None] | None = None) -> None:
        self.db = db  # MySQL dialect
        self.kept_row = kept_row
        self._rows: dict[tuple[str, str], Values] = {}  # (memory id, key) -> its values
        self._by_key: dict[tuple[str, str], set[str]] = {}  # (user, key) -> memory ids
        self._by_memory: dict[str, set[str]] = {}  # memory id -> its keys
        self._keys_known: set[tuple[str, str]] = set()  # (user, key): every row kept
        self._memories_known: set[str] = set()  # memory ids: every row kept
        self._status: dict[str, str | None] = {}  # memory id -> status (None: no memory)
        self._changed: set[tuple[str, str]] = set()  # rows to write (upsert, or delete)
        self._in_sql: set[tuple[str, str]] = set()  # rows SQL holds (only those are deleted)
        self._fact_rows: dict[tuple[str, str], FactRow] = {}  # the FactRow of a kept row
        self._read: dict[tuple[str, str], Values] = {}  # rows as read from SQL

    # --- reads -------------------------------------------------------------------------
    def prefetch(self, user_id: str, keys: Iterable[str]) -> set[str]:
        """Read these keys of the user now (one statement); returns the memories holding
        any of them."""
        wanted = list(dict.fromkeys(keys))
        self._load_keys(user_id, wanted)
        return {m for k in wanted for m in self._by_key.get((user_id, k), ())}

    def current_facts(self, user_id: str, keys: Sequence[str]) -> list[FactRow]:
        self._load_keys(user_id, keys)
        out = [row for row in self._of_keys(user_id, keys) if self._values(row)[3] == "current"]
        return [row for row in out if self._status_of(user_id, row.memory_id) in _LIVE]

    def facts_in_any_state(self, user_id: str, keys: Sequence[str]) -> list[FactRow]:
        self._load_keys(user_id, keys)
        return self._of_keys(user_id, keys)

    def fact_states_of(self, memory_id: str) -> list[tuple[str, str]]:
        self._load_memories([memory_id])
        keys = sorted(self._by_memory.get(memory_id, ()))
        return [(k, self._rows[(memory_id, k)][3]) for k in keys]

    # --- writes ------------------------------------------------------------------------
    def replace_facts(self, user_id: str, memory_id: str, facts: Sequence[FactRow],
                      held: Sequence[str] | None = None) -> list[str]:
        """As ``LifecycleTables.replace_facts``: the memory then holds these rows only."""
        rows = [f for f in facts if len(f.key.encode()) <= MAX_KEY_BYTES]
        keep = {f.key for f in rows}
        if memory_id not in self._memories_known and held is None:
            self._load_memories([memory_id])
        if memory_id in self._memories_known:
            before = set(self._by_memory.get(memory_id, ()))
        else:  # the keys it holds in SQL (read with the batch's memory rows)
            before = set(held or ())
            self._in_sql.update((memory_id, key) for key in before)
        for key in sorted(before - keep):
            self._drop(memory_id, key)
        for f in rows:  # the last of a repeated key wins, as in the upsert
            self._put(f.memory_id, f.key, (user_id, f.value, f.ts, "current"))
        self._memories_known.add(memory_id)
        return list(dict.fromkeys(f.key for f in rows))

    def mark_fact(self, memory_id: str, key: str, state: str) -> None:
        row = self._rows.get((memory_id, key))
        if row is not None:
            self._put(memory_id, key, (*row[:3], state))
        elif memory_id not in self._memories_known:  # a row never read: as before
            self.db.execute("UPDATE memory_facts SET state = ? WHERE memory_id = ? "
                                "AND fact_key = ?", (state, memory_id, key))

    def set_status(self, memory_id: str, status: str | None) -> None:
        """The memory's status as the batch left it (None: deleted)."""
        self._status[memory_id] = status

    def delete_memory(self, memory_id: str) -> None:
        """The memory's rows were deleted (a tombstone, written at once)."""
        for key in list(self._by_memory.get(memory_id, ())):
            self._unlink(memory_id, key)
        self._changed = {pk for pk in self._changed if pk[0] != memory_id}
        self._in_sql = {pk for pk in self._in_sql if pk[0] != memory_id}
        self._read = {pk: v for pk, v in self._read.items() if pk[0] != memory_id}
        self._memories_known.add(memory_id)
        self._status[memory_id] = None

    def flush(self) -> None:
        """Write the rows that changed (inside the batch's transaction): a row read from
        SQL whose state alone changed with an UPDATE by primary key (as ``mark_fact``: a
        record lock, where an upsert of an existing row takes a next-key lock), others
        with one upsert; a row left as read is not written."""
        changed, self._changed = sorted(self._changed), set()
        # a row SQL never held is not deleted: a DELETE of a missing key takes a gap lock
        gone = [pk for pk in changed if pk not in self._rows and pk in self._in_sql]
        for memory_id, key in gone:
            self.db.execute("DELETE FROM memory_facts WHERE memory_id = ? AND "
                                "fact_key = ?", (memory_id, key))
        states: dict[tuple[str, str], list[str]] = {}  # (state, memory id) -> keys
        there = []
        for pk in (pk for pk in changed if pk in self._rows):
            now, was = self._rows[pk], self._read.get(pk)
            if was is not None and was[:3] == now[:3]:
                if was[3] != now[3]:
                    states.setdefault((now[3], pk[0]), []).append(pk[1])
            else:
                there.append((*pk, *now))
        for (state, memory_id), keys in states.items():
            self.db.execute(f"UPDATE memory_facts SET state = ? WHERE memory_id = ? AND "
                                f"fact_key IN ({s.marks(len(keys))})", (state, memory_id, *keys))
        if there:
            self.db.execute_many(self.db.dialect.upsert(
                "memory_facts", FACT_COLUMNS, ("memory_id", "fact_key"), FACT_COLUMNS[2:]),
                there)
        self._in_sql.difference_update(gone)
        self._in_sql.update(pk for pk in changed if pk in self._rows)
        self._read.update((pk, self._rows[pk]) for pk in changed if pk in self._rows)
        for pk in gone:
            self._read.pop(pk, None)

    # --- the kept rows -----------------------------------------------------------------
    def _of_keys(self, user_id: str, keys: Sequence[str]) -> list[FactRow]:
        pairs = sorted((k, m) for k in dict.fromkeys(keys)
                       for m in self._by_key.get((user_id, k), ()))
        return [self._fact_row(m, k) for k, m in pairs]

    def _fact_row(self, memory_id: str, key: str) -> FactRow:
        row = self._fact_rows.get((memory_id, key))
        if row is None:
            values = self._rows[(memory_id, key)]
            row = self._fact_rows[(memory_id, key)] = FactRow(memory_id, key, values[1],
                                                              values[2])
        return row

    def _values(self, row: FactRow) -> Values:
        return self._rows[(row.memory_id, row.key)]

    def _status_of(self, user_id: str, memory_id: str) -> str | None:
        if memory_id in self._status:
            return self._status[memory_id]
        kept = self.kept_row(user_id, memory_id) if self.kept_row else None
        if kept is None:
            rows = self.db.read("SELECT status FROM agent_memories WHERE id = ? AND "
                                    "user_id = ?", (memory_id, user_id))
            self._status[memory_id] = str(rows[0][0]) if rows else None
            return self._status[memory_id]
        return str(kept["status"])

    def _put(self, memory_id: str, key: str, values: Values) -> None:
        old = self._rows.get((memory_id, key))
        if old is not None and old[0] != values[0]:
            self._by_key.get((old[0], key), set()).discard(memory_id)
        self._rows[(memory_id, key)] = values
        self._fact_rows.pop((memory_id, key), None)
        self._by_key.setdefault((values[0], key), set()).add(memory_id)
        self._by_memory.setdefault(memory_id, set()).add(key)
        self._changed.add((memory_id, key))

    def _drop(self, memory_id: str, key: str) -> None:
        self._unlink(memory_id, key)
        self._changed.add((memory_id, key))

    def _unlink(self, memory_id: str, key: str) -> None:
        values = self._rows.pop((memory_id, key), None)
        self._fact_rows.pop((memory_id, key), None)
        if values is not None:
            self._by_key.get((values[0], key), set()).discard(memory_id)
        self._by_memory.get(memory_id, set()).discard(key)

    def _load_keys(self, user_id: str, keys: Sequence[str]) -> None:
        """Every row of the memories holding any of these keys (one statement)."""
        todo = [k for k in dict.fromkeys(keys) if (user_id, k) not in self._keys_known]
        if not todo:
            return
        self._merge(self.db.read(
            f"SELECT STRAIGHT_JOIN {_COLUMNS} FROM (SELECT DISTINCT memory_id FROM "
            f"memory_facts WHERE user_id = ? AND fact_key IN ({s.marks(len(todo))})) h "
            f"JOIN memory_facts f ON f.memory_id = h.memory_id {_MEMORY_JOIN}",
            (user_id, *todo)))
        self._keys_known.update((user_id, k) for k in todo)

    def _load_memories(self, memory_ids: Iterable[str]) -> None:
        todo = [m for m in dict.fromkeys(memory_ids) if m not in self._memories_known]
        if todo:
            self._merge(self.db.read(
                f"SELECT {_COLUMNS} FROM memory_facts f {_MEMORY_JOIN} WHERE f.memory_id IN "
                f"({s.marks(len(todo))})", todo))
            self._memories_known.update(todo)

    def _merge(self, rows: Sequence[Sequence[Any]]) -> None:
        """Rows read from SQL, but for memories kept whole (the batch's are newer)."""
        fresh: set[str] = set()
        for mid, key, user, value, ts, state, status in rows:
            memory_id, fact_key = id_text(mid), id_text(key)
            if memory_id in self._memories_known:
                continue
            fresh.add(memory_id)
            values = (str(user), str(value), str(ts), str(state))
            self._rows[(memory_id, fact_key)] = self._read[(memory_id, fact_key)] = values
            self._in_sql.add((memory_id, fact_key))
            self._by_key.setdefault((str(user), fact_key), set()).add(memory_id)
            self._by_memory.setdefault(memory_id, set()).add(fact_key)
            self._status.setdefault(memory_id, None if status is None else str(status))
        self._memories_known |= fresh


_COLUMNS = "f.memory_id, f.fact_key, f.user_id, f.value, f.ts, f.state, m.status"
# The memory by its primary key, forced: on a table that grew inside the run (statistics
# not yet refreshed) MariaDB joined it through the covering (user_id, status) index, every
# memory of the user for each fact row, and read the facts table whole (a key read took
# 60-80 ms at 600 rows where this plan takes under 1 ms). STRAIGHT_JOIN above: the keys'
# memories first, then their rows by primary key.
_MEMORY_JOIN = ("LEFT JOIN agent_memories m FORCE INDEX (PRIMARY) ON m.id = f.memory_id AND "
                "m.user_id = f.user_id")

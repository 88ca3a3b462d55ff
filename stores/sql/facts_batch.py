"""Issue 14: the lifecycle-table writes of one derivation batch in a few statements.

:class:`BatchedLifecycleTables` stands in for the ``facts`` and ``lives`` of
:class:`~stores.sql.lifecycle.LifecycleTables` during one batch (one thread, one SQL
transaction): ``view`` is the tables with it in front of both. Writes that the batch reads
back only through it are kept and written at its end (:meth:`BatchedLifecycleTables.flush`):

* lifecycle rows (``ensure_life``, ``set_life``): one insert-if-missing statement for the
  new rows and one upsert for the set ones; ``get_life`` sees them. Whether a memory of
  the batch already has a row is read once (:meth:`BatchedLifecycleTables.prefetch`);
  ``ensure_life`` of any other memory is written at once.
* the holders of a fact key in any state (``facts_in_any_state``): read once per key,
  then kept as ``replace_facts`` writes them;
* metadata (``set_metadata``) and status changes (``apply_status_change``), only with
  ``defer_rows`` (the caller then reads memory rows through its kept rows, which hold the
  new values): one ``UPDATE ... CASE`` per user for each. The memory's status as it will
  be is what ``current_facts`` filters on and ``get_life`` gives;
  :meth:`BatchedLifecycleTables.flush_memory` writes one memory's at once (before a read
  of the memory from SQL).

Every other call of the two ports goes to the tables' own. A tombstone (``delete_memory``)
drops what was kept for the memory, as its DELETE would have removed it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from functools import cached_property
from typing import Any

from breadcrumb.processors.lifecycle import MemoryLife
from breadcrumb.processors.supersession import FactRow
from breadcrumb.stores.ports.tables import Store
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import SqlDatabase
from breadcrumb.stores.sql.facts_model import BatchFacts
from breadcrumb.stores.sql.lifecycle import LifecycleTables
from breadcrumb.stores.sql.packed import packer
from breadcrumb.topics.records import MemoryStatusChange

_LIFE_COLUMNS = ("memory_id", "user_id", "tier_since", "hits_base", "window_start")
#: The columns ``SqlMemories.apply_status_change`` sets, in the order they are kept.
STATUS_COLUMNS = ("status", "tier", "updated_at", "superseded_by", "supersedes_memory_id")
_LIVE = ("active", "conflicted")  # the statuses whose current facts count (current_facts)


class BatchedLifecycleTables:
    """The facts and lives of the lifecycle tables for one batch (see the module docstring).

    Why so many methods: it implements the ``FactTable`` and ``LifeTable`` ports
    (``stores.ports.tables``) as one object, since what the batch keeps is shared between
    them (a status it set is what ``current_facts`` filters on and ``get_life`` gives; a
    tombstone drops the memory's facts and life), plus prefetch, the deferred status
    change and flush; the calls it does not batch are passed to the tables' own.
    """

    def __init__(self, tables: LifecycleTables, store: Store, defer_rows: bool,
                 kept_row: Callable[[str, str], dict[str, Any] | None] | None = None) -> None:
        self.tables = tables
        self.store = store  # its memories take a status change that is not deferred
        self.defer_rows = defer_rows  # metadata and status changes written at the end
        self.kept_row = kept_row  # the batch's current memory row, if kept (no SQL read)
        self._has_row: dict[str, bool] = {}  # memory id -> has a lifecycle row in SQL
        self._in_sql: dict[str, tuple[Any, Any, Any]] = {}  # id -> its row's values there
        self._ensured: dict[str, tuple[str, str]] = {}  # id -> (user, since): row to insert
        self._lives: dict[str, tuple[str, str, int, str | None]] = {}  # id -> set_life values
        self._metadata: dict[tuple[str, str], dict[str, Any]] = {}  # (user, id) -> metadata
        self._status: dict[str, dict[str, tuple[Any, ...]]] = {}  # user -> id -> STATUS_COLUMNS
        self._holders: dict[tuple[str, str], dict[str, FactRow]] = {}  # (user, key) -> id -> row
        #: MySQL: memory_facts read once and written at the end (stores.sql.facts_model)
        self.model = kept_facts(tables, defer_rows, kept_row)

    @cached_property
    def view(self) -> LifecycleTables:
        """The lifecycle tables with this batch in front of their facts and lives."""
        return self.tables.within(facts=self, lives=self)

    def prefetch(self, memory_ids: Iterable[str]) -> None:
        """Read which of these memories have a lifecycle row (one statement per 500)."""
        ids = [m for m in dict.fromkeys(memory_ids) if m not in self._has_row]
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            for mid, since, base, window in self.tables.db.read(
                    "SELECT memory_id, tier_since, hits_base, window_start FROM "
                    f"memory_lifecycle WHERE memory_id IN ({s.marks(len(part))})", part):
                self._in_sql[str(mid)] = (since, base, window)
            self._has_row.update((m, m in self._in_sql) for m in part)

    def prefetch_facts(self, keys: dict[str, Iterable[str]]) -> dict[str, set[str]]:
        """Read the fact keys of each user at once (MySQL: ``stores.sql.facts_model``); returns
        each user's memories holding any of them (none without the model)."""
        if self.model is None:
            return {}
        return {user_id: self.model.prefetch(user_id, ks) for user_id, ks in keys.items()}

    # --- lifecycle rows ----------------------------------------------------------------
    def ensure_life(self, user_id: str, memory_id: str, since: str) -> None:
        if memory_id not in self._has_row:  # not read: as before, one statement now
            self.tables.lives.ensure_life(user_id, memory_id, since)
        elif not self._has_row[memory_id] and memory_id not in self._lives:
            self._ensured.setdefault(memory_id, (user_id, since))  # the first one inserts

    def set_life(self, user_id: str, memory_id: str, tier_since: str, hits_base: int,
                 window_start: str | None) -> None:
        self._lives[memory_id] = (user_id, tier_since, hits_base, window_start)

    def get_life(self, user_id: str, memory_id: str) -> MemoryLife | None:
        pending = self._pending(memory_id)
        row = self.kept_row(user_id, memory_id) if self.kept_row else None
        if row is not None and memory_id in self._has_row:  # both known: no SQL read
            return _life(row, pending or self._in_sql.get(memory_id, (None, None, None)))
        life: MemoryLife | None = self.tables.lives.get_life(user_id, memory_id)
        status = self._status.get(user_id, {}).get(memory_id)
        if life is not None and status is not None:  # its UPDATE is not written yet
            life = replace(life, status=str(status[0]), tier=str(status[1]))
        if life is None or pending is None:
            return life
        since, base, window = pending
        return replace(life, tier_since=str(since or life.created_at),
                       hits_base=int(base or 0), window_start=window)

    def _pending(self, memory_id: str) -> tuple[Any, Any, Any] | None:
        """The lifecycle values kept for the memory, as SQL will hold them (None: none)."""
        if memory_id in self._lives:
            return self._lives[memory_id][1:]
        if memory_id in self._ensured:  # no row in SQL yet: the one ensure_life inserts
            since = self._ensured[memory_id][1]
            return (since, 0, since)
        return None

    # --- facts -------------------------------------------------------------------------
    def facts_in_any_state(self, user_id: str, keys: Sequence[str]) -> list[FactRow]:
        """As the tables' (in no particular order): each key read once a batch, then kept
        as ``replace_facts`` and ``delete_memory`` change its holders."""
        if self.model is not None:
            return self.model.facts_in_any_state(user_id, keys)
        todo = [k for k in keys if (user_id, k) not in self._holders]
        if todo:
            for k in todo:
                self._holders[(user_id, k)] = {}
            for row in self.tables.facts.facts_in_any_state(user_id, todo):
                self._holders[(user_id, row.key)][row.memory_id] = row
        return [row for k in keys for row in self._holders[(user_id, k)].values()]

    def current_facts(self, user_id: str, keys: Sequence[str]) -> list[FactRow]:
        """As the tables', with the statuses this batch has set but not written yet."""
        if self.model is not None:
            return self.model.current_facts(user_id, keys)
        pending = self._status.get(user_id)
        if not pending:
            return list(self.tables.facts.current_facts(user_id, keys))
        return [row for row, status in self.tables.facts.current_facts_any_status(user_id, keys)
                if (pending[row.memory_id][0] if row.memory_id in pending else status)
                in _LIVE]

    def replace_facts(self, user_id: str, memory_id: str, facts: Sequence[FactRow],
                      held: Sequence[str] | None = None) -> list[str]:
        if self.model is not None:
            return self.model.replace_facts(user_id, memory_id, facts, held)
        kept: list[str] = self.tables.facts.replace_facts(user_id, memory_id, facts, held)
        now = set(kept)
        for (user, key), holders in self._holders.items():
            if user == user_id and key not in now:
                holders.pop(memory_id, None)  # its row of that key was deleted
        for f in facts:  # the upserted rows (the last of a repeated key wins, as in SQL)
            if f.key in now and (user_id, f.key) in self._holders:
                self._holders[(user_id, f.key)][f.memory_id] = FactRow(
                    f.memory_id, f.key, f.value, f.ts)
        return kept

    def mark_fact(self, memory_id: str, key: str, state: str) -> None:
        if self.model is not None:
            self.model.mark_fact(memory_id, key, state)
        else:
            self.tables.facts.mark_fact(memory_id, key, state)

    def fact_states_of(self, memory_id: str) -> list[tuple[str, str]]:
        if self.model is not None:
            return self.model.fact_states_of(memory_id)
        return list(self.tables.facts.fact_states_of(memory_id))

    # --- metadata ----------------------------------------------------------------------
    def set_metadata(self, user_id: str, memory_id: str, metadata: dict[str, Any]) -> None:
        if not self.defer_rows:
            self.tables.lives.set_metadata(user_id, memory_id, metadata)
            return
        self._metadata.pop((user_id, memory_id), None)
        self._metadata[(user_id, memory_id)] = metadata

    def apply_status_change(self, change: MemoryStatusChange, values: Sequence[Any]) -> None:
        """``MemoryRows.apply_status_change(change)``; ``values``: the STATUS_COLUMNS it
        leaves in the row (the links coalesced with the row's), written at the end when
        rows are deferred."""
        if not self.defer_rows:
            self.store.memories.apply_status_change(change)
            return
        self._status.setdefault(change.user_id, {})[change.memory_id] = tuple(values)
        if self.model is not None:
            self.model.set_status(change.memory_id, change.status)

    def flush_memory(self, user_id: str, memory_id: str) -> None:
        """Write the memory's kept metadata and status now (it is about to be read from
        SQL)."""
        metadata = self._metadata.pop((user_id, memory_id), None)
        if metadata is not None:
            self.tables.lives.set_metadata(user_id, memory_id, metadata)
        status = self._status.get(user_id, {}).pop(memory_id, None)
        if status is not None:
            with self.tables.db.transaction():
                _set_status_many(self.tables.db, user_id, [(memory_id, status)])

    def delete_memory(self, user_id: str, memory_id: str) -> bool:
        self._metadata.pop((user_id, memory_id), None)
        self._status.get(user_id, {}).pop(memory_id, None)
        self._ensured.pop(memory_id, None)
        self._lives.pop(memory_id, None)
        self._has_row[memory_id] = False
        self._in_sql.pop(memory_id, None)
        for holders in self._holders.values():
            holders.pop(memory_id, None)
        deleted = bool(self.tables.lives.delete_memory(user_id, memory_id))
        if self.model is not None:
            self.model.delete_memory(memory_id)
        return deleted

    # --- the end of the batch ----------------------------------------------------------
    def flush(self) -> None:
        """Write what was kept (inside the batch's transaction)."""
        if self.model is not None:
            with self.tables.db.transaction():
                self.model.flush()
        if not (self._ensured or self._lives or self._metadata or self._status):
            return
        db = self.tables.db
        ensured, self._ensured = self._ensured, {}
        lives, self._lives = self._lives, {}
        metadata, self._metadata = self._metadata, {}
        statuses, self._status = self._status, {}
        with db.transaction():
            for user_id, changed in statuses.items():
                items = list(changed.items())
                for start in range(0, len(items), 500):
                    _set_status_many(db, user_id, items[start:start + 500])
            if ensured:
                sql = self.tables.lives.insert_missing_life_sql()
                db.execute_many(sql, [(m, u, since, 0, since) for m, (u, since) in ensured.items()])
            if lives:
                db.execute_many(db.dialect.upsert(
                    "memory_lifecycle", _LIFE_COLUMNS, ("memory_id",), _LIFE_COLUMNS[2:]),
                    [(m, *values) for m, values in lives.items()])
            for user_id, group in _by_user(metadata).items():
                for start in range(0, len(group), 500):
                    _set_metadata_many(db, user_id, group[start:start + 500])
        for mid, (_user, since) in ensured.items():
            self._in_sql.setdefault(mid, (since, 0, since))
        for mid, (_user, *values) in lives.items():
            self._in_sql[mid] = (values[0], values[1], values[2])
        self._has_row.update((m, True) for m in (*ensured, *lives))

    # --- the calls a batch does not keep: the tables' own -----------------------------
    def fact_keys_of(self, memory_ids: Sequence[str]) -> dict[str, list[str]]:
        return self.tables.facts.fact_keys_of(memory_ids)

    def current_facts_any_status(self, user_id: str, keys: Sequence[str]
                                 ) -> list[tuple[FactRow, str]]:
        return self.tables.facts.current_facts_any_status(user_id, keys)

    def facts_of(self, memory_id: str, state: str = "current") -> list[FactRow]:
        return self.tables.facts.facts_of(memory_id, state)

    def insert_missing_life_sql(self) -> str:
        return self.tables.lives.insert_missing_life_sql()

    def set_window(self, memory_id: str, hits_base: int, window_start: str) -> None:
        self.tables.lives.set_window(memory_id, hits_base, window_start)

    def iter_lives(self, batch: int = 1000) -> Iterator[MemoryLife]:
        return self.tables.lives.iter_lives(batch)

    def owner_of(self, memory_id: str) -> str | None:
        return self.tables.lives.owner_of(memory_id)


def kept_facts(tables: LifecycleTables, defer_rows: bool,
               kept_row: Callable[[str, str], dict[str, Any] | None] | None
               ) -> BatchFacts | None:
    """The batch's kept ``memory_facts`` (MySQL, rows deferred), else None."""
    return BatchFacts(tables.db, kept_row) if defer_rows and tables.db.dialect.mysql else None


def _life(row: dict[str, Any], values: tuple[Any, Any, Any]) -> MemoryLife:
    """``LifecycleTables.get_life`` of a memory row and its lifecycle values (as read)."""
    since, base, window = values
    return MemoryLife(
        memory_id=str(row["id"]), user_id=str(row["user_id"]), project_id=row["project_id"],
        status=str(row["status"]), tier=str(row["tier"]), hit_count=int(row["hit_count"] or 0),
        last_used_at=row["last_used_at"], created_at=str(row["created_at"]),
        tier_since=str(since or row["created_at"]), hits_base=int(base or 0),
        window_start=window)


def _by_user(metadata: dict[tuple[str, str], dict[str, Any]]
             ) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for (user_id, memory_id), value in metadata.items():
        out.setdefault(user_id, []).append((memory_id, value))
    return out


def _set_metadata_many(db: SqlDatabase, user_id: str,
                       group: list[tuple[str, dict[str, Any]]]) -> None:
    """``set_metadata`` of several memories of one user in one statement."""
    cases = " ".join("WHEN ? THEN ?" for _ in group)
    pack = packer(db.dialect.mysql)  # compressed on SQLite (issue 49)
    params: list[Any] = [v for mid, meta in group for v in (mid, pack(s.dumps(meta)))]
    db.execute(f"UPDATE agent_memories SET metadata = CASE id {cases} END WHERE "
               f"id IN ({s.marks(len(group))}) AND {s.owner_only(db.dialect.mysql)} = ?",
               (*params, *(mid for mid, _ in group), user_id))


def _set_status_many(db: SqlDatabase, user_id: str,
                     group: list[tuple[str, tuple[Any, ...]]]) -> None:
    """``apply_status_change`` of several memories of one user in one statement (each
    column set to the value its changes left)."""
    if not group:
        return
    params: list[Any] = []
    sets = []
    for n, column in enumerate(STATUS_COLUMNS):
        sets.append(f"{column} = CASE id {' '.join('WHEN ? THEN ?' for _ in group)} END")
        params += [v for mid, values in group for v in (mid, values[n])]
    db.execute(f"UPDATE agent_memories SET {', '.join(sets)} WHERE id IN "
               f"({s.marks(len(group))}) AND {s.owner_only(db.dialect.mysql)} = ?",
               (*params, *(mid for mid, _ in group), user_id))

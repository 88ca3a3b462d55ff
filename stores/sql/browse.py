"""Browsing reads over a SQL store (issue 26): memories with filters and keyset pages,
a memory's supersession chain, a tenant's threads, the dead letters.

:class:`SqlBrowse` is the ``browse`` a SQL store hands out (SQLite or MySQL;
``stores.ports.tables.MemoryBrowse``). Every read is scoped to one ``user_id`` (dead
letters: optionally all, for an admin).

Paging is keyset, never OFFSET: the cursor holds the last row's sort value and id, so a
page costs the same at the first memory as at the 100,000th. The sort indexes this needs
are created on first use (:meth:`SqlBrowse.ensure_indexes`, idempotent, both dialects).
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from breadcrumb.stores.ports.tables import MemoryFilter
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import SqlDatabase
from breadcrumb.stores.sql.memories import SqlMemories
from breadcrumb.stores.sql.packed import unpack

__all__ = ["BROWSE_INDEXES", "DEAD_LETTER_SELECT", "LIST_COLUMNS", "SORTS", "TEXT_WINDOW",
           "CursorError", "MemoryFilter", "SqlBrowse", "decode_cursor", "encode_cursor",
           "json_field_like", "like_pattern"]

#: sort name -> (column, its type for the cursor)
SORTS: dict[str, tuple[str, type]] = {
    "time": ("created_at", str),
    "importance": ("importance", float),
    "hits": ("hit_count", int),
}
BROWSE_INDEXES: tuple[tuple[str, ...], ...] = (
    ("user_id", "created_at", "id"),
    ("user_id", "importance", "id"),
    ("user_id", "hit_count", "id"),
    ("user_id", "source_thread_id", "created_at", "id"),
)
#: A text filter (LIKE '%…%': no index can serve it) looks at most at this many rows of the
#: sort order per page; a page may then hold fewer matches than asked, with a cursor to go
#: on from where the scan stopped. Bounds a page's cost at any size (bench/list_memories.py).
TEXT_WINDOW = 2000
LIST_COLUMNS: tuple[str, ...] = s.MEMORY_COLUMNS + s.MEMORY_EXTRA


class CursorError(ValueError):
    """A cursor that this server did not hand out (or for another sort)."""


DEAD_LETTER_SELECT = (
    "SELECT d.id, d.received_at, d.source, d.reason, d.field, d.event_id, d.user_id, "
    "d.payload, k.letter_key FROM dead_letters d "
    "LEFT JOIN dead_letter_keys k ON k.dead_letter_id = d.id")


class SqlBrowse:
    """The browsing reads of one SQL store (see the module docstring).

    Why so many methods: the reads of the browse routes (a page of memories, a version
    chain, fact versions, threads and their memory counts, dead letters) and the few
    helpers their SQL shares (the sort indexes, a text-filtered page, a chain's next
    step); each read is one or two statements.
    """

    def __init__(self, db: SqlDatabase, memories: SqlMemories) -> None:
        self.db = db
        self.memories = memories
        self._ready = False  # the sort indexes exist
        self._ready_lock = threading.Lock()

    def ensure_indexes(self) -> None:
        """Create the sort indexes of ``agent_memories`` once per store (idempotent)."""
        with self._ready_lock:
            if self._ready:
                return
            with self.db.transaction():
                for cols in BROWSE_INDEXES:
                    self._create_index("agent_memories", cols)
            self._ready = True

    def _create_index(self, table: str, cols: Sequence[str]) -> None:
        name = f"ix_browse_{table}_{'_'.join(cols)}"
        if not self.db.dialect.mysql:
            self.db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({', '.join(cols)})")
            return
        found = self.db.fetch("SELECT 1 FROM information_schema.statistics WHERE table_schema = "
                             "DATABASE() AND table_name = ? AND index_name = ?", (table, name))
        if not found:
            # VARBINARY(1600) ids: a prefix keeps the key under InnoDB's 3072-byte limit
            parts = [f"{c}(255)" if c in ("id", "source_thread_id", "user_id") else c for c in cols]
            self.db.execute(f"CREATE INDEX {name} ON {table} ({', '.join(parts)})")

    def list_memories(self, flt: MemoryFilter, sort: str = "time", limit: int = 50,
                      cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of the user's memories (full rows, JSON decoded), highest ``sort`` first,
        ties by id; and the cursor of the next page (None at the end)."""
        if sort not in SORTS:
            raise ValueError(f"sort must be one of {', '.join(SORTS)}")
        self.ensure_indexes()
        column = SORTS[sort][0]
        text = flt.text
        where, params = _where(replace(flt, text=None), self.db.dialect.mysql)
        if cursor is not None:
            value, last_id = decode_cursor(sort, cursor)
            where.append(f"({column} < ? OR ({column} = ? AND id < ?))")
            params += [value, value, last_id]
        order = f"ORDER BY {column} DESC, id DESC"
        if text is not None:
            return self._text_page(where, params, order, column, sort, text, limit)
        sql = (f"{s.select_sql('agent_memories', LIST_COLUMNS)} WHERE {' AND '.join(where)} "
               f"{order} LIMIT ?")
        rows = self.db.read(sql, (*params, limit + 1))
        page = [s.memory_row_dict(texts(r)) for r in rows[:limit]]
        more = len(rows) > limit
        nxt = encode_cursor(sort, page[-1][column], page[-1]["id"]) if more and page else None
        return page, nxt

    def _text_page(self, where: list[str], params: list[Any], order: str, column: str,
                   sort: str, text: str, limit: int) -> tuple[list[dict[str, Any]], str | None]:
        """A text-filtered page: the matches among the next :data:`TEXT_WINDOW` rows of the
        order (the window and the match both in SQL). The cursor goes on after the last match,
        or after the window when it held fewer than ``limit`` matches."""
        clause = " AND ".join(where)
        match, args = _where(MemoryFilter("", text=text), self.db.dialect.mysql)
        cols = ", ".join(LIST_COLUMNS)
        rows = self.db.read(
            f"SELECT {cols} FROM (SELECT {cols} FROM agent_memories WHERE {clause} {order} "
            f"LIMIT ?) w WHERE {match[-1]} {order} LIMIT ?",
            (*params, TEXT_WINDOW, *args[1:], limit + 1))
        page = [s.memory_row_dict(texts(r)) for r in rows[:limit]]
        if len(rows) > limit:
            return page, encode_cursor(sort, page[-1][column], page[-1]["id"])
        end = self.db.read(f"SELECT {column}, id FROM agent_memories WHERE {clause} {order} "
                          "LIMIT 1 OFFSET ?", (*params, TEXT_WINDOW - 1))
        if not end:  # the window reached the last row: nothing after it
            return page, None
        value, last_id = texts(end[0])
        return page, encode_cursor(sort, value, last_id)

    def versions(self, user_id: str, memory_id: str, limit: int = 200
                 ) -> list[dict[str, Any]]:
        """The supersession chain through ``memory_id``, oldest first: each version's id,
        summary, status, tier, created_at, updated_at and its links. Empty when the memory is
        not the user's. A chain is followed ``limit`` steps each way at most."""
        start = self.memories.get_memory_row(user_id, memory_id)
        if start is None:
            return []
        seen = {start["id"]}
        older = self._follow(user_id, start, "supersedes_memory_id", seen, limit)
        newer = self._follow(user_id, start, "superseded_by", seen, limit)
        return [_version(r) for r in [*reversed(older), start, *newer]]

    def fact_versions(self, user_id: str, memory_id: str) -> list[dict[str, Any]]:
        """Each fact (an exact value: ``DB_PORT``) the memory holds, with every value the user's
        memories gave it, oldest first: memory id, value, when, current or superseded."""
        if not self.has_facts():
            return []
        keys = [texts(r)[0] for r in self.db.read(
            "SELECT fact_key FROM memory_facts WHERE user_id = ? AND memory_id = ?",
            (user_id, memory_id))]
        out = []
        for key in sorted(set(keys)):
            rows = self.db.read("SELECT memory_id, value, ts, state FROM memory_facts WHERE "
                                "user_id = ? AND fact_key = ? ORDER BY ts, memory_id",
                                (user_id, key))
            out.append({"key": key, "versions": [
                {"memory_id": m, "value": v, "ts": ts, "state": st}
                for m, v, ts, st in (texts(r) for r in rows)]})
        return out

    def has_facts(self) -> bool:
        """Whether the lifecycle's facts table exists in this database."""
        if self.db.dialect.mysql:
            sql = ("SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() "
                   "AND table_name = 'memory_facts'")
        else:
            sql = "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'memory_facts'"
        return bool(self.db.read(sql))

    def _follow(self, user_id: str, row: dict[str, Any], link: str, seen: set[str],
                limit: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for _ in range(limit):
            nxt = row.get(link)
            if not nxt or nxt in seen:
                break
            found = self.memories.get_memory_row(user_id, nxt)
            if found is None:
                break
            seen.add(nxt)
            out.append(found)
            row = found
        return out

    def list_threads(self, user_id: str, project_id: str | None = None,
                     limit: int = 100, after: str | None = None) -> tuple[list[dict[str, Any]],
                                                                          str | None]:
        """The user's threads in thread id order (keyset: ``after`` = the last id seen):
        agent, project, event count, first and last event time, last index."""
        where, params = ["user_id = ?"], [user_id]
        if project_id is not None:
            where.append("project_id = ?")
            params.append(project_id)
        if after is not None:
            where.append("thread_id > ?")
            params.append(after)
        rows = self.db.read(
            "SELECT thread_id, MIN(agent_id), MIN(project_id), COUNT(*), MIN(ts), MAX(ts), "
            f"MIN(idx), MAX(idx) FROM raw_events WHERE {' AND '.join(where)} "
            "GROUP BY thread_id ORDER BY thread_id LIMIT ?", (*params, limit + 1))
        out = [{"thread_id": t, "agent_id": a, "project_id": p, "event_count": int(n),
                "first_ts": f, "last_ts": la, "first_index": int(i0), "last_index": int(i1)}
               for t, a, p, n, f, la, i0, i1 in (texts(r) for r in rows[:limit])]
        return out, (out[-1]["thread_id"] if len(rows) > limit and out else None)

    def thread_memory_counts(self, user_id: str, thread_ids: Sequence[str]
                             ) -> dict[str, int]:
        """Memories per source thread, for the listed threads."""
        if not thread_ids:
            return {}
        rows = self.db.read("SELECT source_thread_id, COUNT(*) FROM agent_memories WHERE "
                            f"user_id = ? AND source_thread_id IN ({s.marks(len(thread_ids))}) "
                            "GROUP BY source_thread_id", (user_id, *thread_ids))
        return {str(texts(r)[0]): int(r[1]) for r in rows}

    def list_dead_letters(self, user_id: str | None, limit: int = 100,
                          before: int | None = None) -> list[dict[str, Any]]:
        """Dead letters newest first (keyset: ``before`` = the last id seen), of ``user_id``
        only unless it is None (an admin asking for all)."""
        where: list[str] = []
        params: list[Any] = []
        if user_id is not None:  # letters of the processors carry no user_id column
            where.append("(d.user_id = ? OR (d.user_id IS NULL AND d.payload LIKE ? ESCAPE '!'))")
            params += [user_id, json_field_like("user_id", user_id)]
        if before is not None:
            where.append("d.id < ?")
            params.append(before)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self.db.read(f"{DEAD_LETTER_SELECT}{clause} ORDER BY d.id DESC LIMIT ?",
                           (*params, limit))
        return [_letter(texts(r)) for r in rows]

    def get_dead_letter(self, letter_id: int) -> dict[str, Any] | None:
        """One dead letter by id."""
        rows = self.db.read(f"{DEAD_LETTER_SELECT} WHERE d.id = ?", (letter_id,))
        return _letter(texts(rows[0])) if rows else None


def encode_cursor(sort: str, value: Any, memory_id: str) -> str:
    """An opaque cursor: the last row's sort value and id."""
    raw = json.dumps([sort, value, memory_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(sort: str, cursor: str) -> tuple[Any, str]:
    """The (value, id) of a cursor; :class:`CursorError` when it is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        named, value, memory_id = json.loads(raw)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise CursorError("cursor is not one this server handed out") from exc
    kind = SORTS[sort][1]
    if named != sort or not isinstance(memory_id, str) or not isinstance(value, int | float | str):
        raise CursorError(f"cursor does not belong to sort={sort}")
    return kind(value), memory_id


def like_pattern(text: str) -> str:
    """``%text%`` for ``LIKE ? ESCAPE '!'``, its wildcards taken literally."""
    # "!" escapes: a backslash means different things in MySQL and SQLite literals
    return "%" + text.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%"


def json_field_like(name: str, value: str) -> str:
    """A LIKE pattern finding ``"name":"value"`` in compact JSON text (a payload)."""
    return like_pattern(f'"{name}":{s.dumps(value)}')


def _where(flt: MemoryFilter, mysql: bool = False) -> tuple[list[str], list[Any]]:
    where, params = ["user_id = ?"], [flt.user_id]
    for column, value in (("project_id", flt.project_id), ("source_thread_id", flt.thread_id),
                          ("status", flt.status), ("tier", flt.tier)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if flt.tag is not None:  # tags is a JSON array: match the tag as one whole JSON string
        where.append("tags LIKE ? ESCAPE '!'")
        params.append(like_pattern(s.dumps(flt.tag)))
    if flt.text is not None:  # SQLite's LIKE ignores ASCII case itself; MySQL's _bin not
        fold = "LOWER({})" if mysql else "{}"
        where.append(f"({fold.format('summary')} LIKE ? ESCAPE '!' OR "
                     f"{fold.format('retrieve_when')} LIKE ? ESCAPE '!')")
        params += [like_pattern(flt.text.lower() if mysql else flt.text)] * 2
    return where, params


def texts(row: Sequence[Any]) -> tuple[Any, ...]:
    """A row with its bytes decoded (MySQL returns VARBINARY columns as bytes; SQLite a
    compressed text, :mod:`stores.sql.packed`)."""
    return tuple(unpack(v) if isinstance(v, bytes | bytearray) else v for v in row)


def _version(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "summary", "status", "tier", "created_at", "updated_at",
            "supersedes_memory_id", "superseded_by", "importance")
    out = {k: row.get(k) for k in keys}
    out["source_range"] = {"thread_id": row["source_thread_id"],
                           "start_index": row["source_start_index"],
                           "end_index": row["source_end_index"]}
    # superseded: its last change is when the newer version replaced it
    out["superseded_at"] = row["updated_at"] if row.get("superseded_by") else None
    return out


def _letter(r: Sequence[Any]) -> dict[str, Any]:
    return {"id": int(r[0]), "received_at": r[1], "source": r[2], "reason": r[3],
            "field": r[4], "event_id": r[5], "user_id": r[6], "payload": r[7],
            "position": r[8]}

"""The SQL tables shared by the SQLite and MySQL/TiDB stores, and how rows map to records.

Tables are declared once, dialect-neutral, and rendered per :class:`Dialect`. The SQL is
TiDB-compatible: no stored procedures, triggers or FULLTEXT, utf8mb4, explicit primary keys.

Identifier columns (user, thread, event, memory ids) are ``VARBINARY`` in MySQL so they
compare byte for byte: utf8mb4 collations are case-insensitive or PAD SPACE (``"a"`` equals
``"a "``), which would let one tenant's id match another's. Their byte sizes follow the event
contract (user/event ids <= 128 characters, thread ids <= 256, 4 bytes per character).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from breadcrumb.stores.sql.packed import unpack
from breadcrumb.topics.records import Chunk, DeadLetter, Event, Fact, Observation, SourceRange


@dataclass(frozen=True, slots=True)
class Column:
    """One column: ``type`` is a logical type that each dialect maps to SQL."""

    name: str
    type: str  # uid | tid | key | short | ts | int | real | text | json | serial
    not_null: bool = False
    default: str | None = None


@dataclass(frozen=True, slots=True)
class Table:
    """A table: columns, primary key, unique keys and secondary indexes."""

    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    unique: tuple[tuple[str, ...], ...] = ()
    indexes: tuple[tuple[str, ...], ...] = ()
    mysql_options: str = ""
    #: SQLite only: ``(name prefix, columns, WHERE condition or "")``: partial indexes
    #: (MySQL has none) and covering ones over TEXT columns (MySQL would need prefixes)
    sqlite_indexes: tuple[tuple[str, tuple[str, ...], str], ...] = ()
    #: SQLite only: rows kept in primary-key order (``WITHOUT ROWID``), not insertion order
    sqlite_without_rowid: bool = False
    #: MySQL only: secondary indexes SQLite keeps as partial ones (``sqlite_indexes``)
    mysql_indexes: tuple[tuple[str, ...], ...] = ()


def without_rowid(create_sql: str) -> bool:
    """Whether a SQLite ``CREATE TABLE`` statement (``sqlite_schema.sql``) keeps its rows in
    key order (:attr:`Table.sqlite_without_rowid`)."""
    return create_sql.rstrip().upper().endswith("WITHOUT ROWID")


def _c(spec: str) -> Column:
    """``"name:type"``; a trailing ``!`` means NOT NULL, ``=value`` a default."""
    name, _, rest = spec.partition(":")
    rest, _, default = rest.partition("=")
    return Column(name, rest.rstrip("!"), rest.endswith("!"), default or None)


def _t(name: str, cols: str, pk: str, **kw: Any) -> Table:
    return Table(name, tuple(_c(s) for s in cols.split()), tuple(pk.split()), **kw)


#: TiDB reads this comment (MySQL/MariaDB ignore it): keep AUTO_INCREMENT monotonic across
#: TiDB servers, so ``seq`` order is append order.
_TIDB_MONOTONIC = "/*T![auto_id_cache] AUTO_ID_CACHE=1 */"

TABLES: tuple[Table, ...] = (
    _t("raw_events",
       "user_id:uid! thread_id:tid! idx:int! event_id:uid! project_id:uid agent_id:uid "
       "ts:ts! role:short! kind:short! tool:uid content:text! attrs:json! tokens:int",
       "user_id thread_id idx", unique=(("user_id", "event_id"),)),
    _t("agent_memories",
       "id:key! user_id:uid! project_id:uid kind:short! summary:text! source_thread_id:tid! "
       "source_start_index:int! source_end_index:int! tags:json! query_hints:json! "
       "retrieve_when:text! importance:real! status:short! tier:short! "
       "supersedes_memory_id:key superseded_by:key facts:json! metadata:json! "
       "created_at:ts! updated_at:ts! hit_count:int!=0 last_used_at:ts",
       "id", indexes=(("user_id", "status"),)),
    _t("source_chunks",
       "id:key! memory_id:key! user_id:uid! project_id:uid thread_id:tid! event_id:uid! "
       "event_index:int! char_start:int! char_end:int! text:text! tokens:int!",
       "id", indexes=(("user_id", "memory_id"),)),
    _t("dead_letters",
       "id:serial! received_at:ts! source:short! reason:text! field:text event_id:uid "
       "user_id:uid payload:text!",
       "id", mysql_options=_TIDB_MONOTONIC),
    _t("thread_state", "state_key:key! state:json! pending_count:int!=0 updated_at:ts!",
       "state_key", indexes=(("pending_count",),),
       # a tenant's open windows (recall's fresh tail) by key, without reading its closed
       # threads: at a million events the key range alone read 20,835 rows to find 5
       sqlite_indexes=(("open", ("state_key",), "pending_count > 0"),),
       # in key order (schema 5): a row grows while its window is open and shrinks when it
       # closes; in rowid order the space it gives back is never reused (new threads go
       # at the end), and at a million events 81 % of the table's pages were empty
       sqlite_without_rowid=True),
    _t("memory_audit",
       "id:serial! memory_id:key! user_id:uid! at:ts! actor:short! field:short! "
       "from_value:text to_value:text reason:text",
       "id", indexes=(("user_id", "memory_id"),), mysql_options=_TIDB_MONOTONIC),
    _t("event_log",
       "seq:serial! user_id:uid event_id:uid thread_key:key! payload:text! accepted_at:ts! "
       "processed:int!=0",
       "seq", unique=(("user_id", "event_id"),), mysql_indexes=(("processed", "seq"),),
       # SQLite (schema 6): only the entries not processed yet are indexed; a (processed,
       # seq) index held every entry of the log (14 MB at a million events)
       sqlite_indexes=(("pending", ("seq",), "processed = 0"),),
       mysql_options=_TIDB_MONOTONIC),
    _t("kv_counters", "name:key! value:int!=0", "name"),
    _t("schema_meta", "name:key! value:int!=0", "name"),  # "version": see stores.sql.migrate
)

TABLE_NAMES: tuple[str, ...] = tuple(t.name for t in TABLES)


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between SQL engines: placeholders, types, DDL and upsert syntax."""

    name: str
    types: Mapping[str, str]
    placeholder: str
    mysql: bool

    def sql(self, text: str) -> str:
        """Statements are written with ``?``; rewrite to this dialect's placeholder."""
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def create_table(self, table: Table) -> list[str]:
        """``CREATE TABLE IF NOT EXISTS`` (+ indexes) statements; safe to re-run."""
        parts = [self._column(table, c) for c in table.columns]
        if not self._inline_pk(table):
            parts.append(f"PRIMARY KEY ({', '.join(table.primary_key)})")
        for cols in table.unique:
            name = f"KEY {_index_name(table, cols, 'uq')} " if self.mysql else ""
            parts.append(f"UNIQUE {name}({', '.join(cols)})")
        if self.mysql:
            parts += [f"KEY {_index_name(table, c, 'ix')} ({', '.join(c)})"
                      for c in (*table.indexes, *table.mysql_indexes)]
        body = ",\n  ".join(parts)
        stmt = f"CREATE TABLE IF NOT EXISTS {table.name} (\n  {body}\n)"
        if table.sqlite_without_rowid and not self.mysql:
            stmt += " WITHOUT ROWID"
        if self.mysql:
            opts = f"DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin {table.mysql_options}"
            return [f"{stmt} {opts.rstrip()}"]
        return [stmt] + [
            f"CREATE INDEX IF NOT EXISTS {_index_name(table, c, 'ix')} "
            f"ON {table.name} ({', '.join(c)})"
            for c in table.indexes
        ] + [
            f"CREATE INDEX IF NOT EXISTS {_index_name(table, c, prefix)} "
            f"ON {table.name} ({', '.join(c)}){f' WHERE {where}' if where else ''}"
            for prefix, c, where in table.sqlite_indexes
        ]

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str],
               replace: Sequence[str] = (), add: Sequence[str] = ()) -> str:
        """Insert a row; on a key clash overwrite ``replace`` and increment ``add`` columns.
        (Built once per distinct statement: writers ask for it on every row.)"""
        return _upsert_sql(self.mysql, table, tuple(columns), tuple(key), tuple(replace),
                           tuple(add))

    def _inline_pk(self, table: Table) -> bool:
        return not self.mysql and any(c.type == "serial" for c in table.columns)

    def _column(self, table: Table, col: Column) -> str:
        out = f"{col.name} {self.types[col.type]}"
        if col.not_null and not (col.type == "serial" and not self.mysql):
            out += " NOT NULL"
        if col.default is not None:
            out += f" DEFAULT {col.default}"
        return out


def _index_name(table: Table, cols: Sequence[str], prefix: str) -> str:
    return f"{prefix}_{table.name}_{'_'.join(cols)}"


SQLITE = Dialect(
    "sqlite",
    {"uid": "TEXT", "tid": "TEXT", "key": "TEXT", "short": "TEXT", "ts": "TEXT",
     "int": "INTEGER", "real": "REAL", "text": "TEXT", "json": "TEXT",
     "serial": "INTEGER PRIMARY KEY AUTOINCREMENT"},
    "?", mysql=False,
)

MYSQL = Dialect(
    "mysql",
    {"uid": "VARBINARY(512)", "tid": "VARBINARY(1024)", "key": "VARBINARY(1600)",
     "short": "VARCHAR(64)", "ts": "VARCHAR(64)", "int": "BIGINT", "real": "DOUBLE",
     "text": "LONGTEXT", "json": "LONGTEXT", "serial": "BIGINT AUTO_INCREMENT"},
    "%s", mysql=True,
)


# --- row mapping --------------------------------------------------------------------------

@lru_cache(maxsize=256)
def _upsert_sql(mysql: bool, table: str, columns: tuple[str, ...], key: tuple[str, ...],
                replace: tuple[str, ...], add: tuple[str, ...]) -> str:
    marks = ", ".join("?" for _ in columns)
    head = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
    new = "VALUES({0})" if mysql else "excluded.{0}"
    sets = [f"{c} = {new.format(c)}" for c in replace]
    sets += [f"{c} = {c} + {new.format(c)}" for c in add]
    if mysql:
        return f"{head} ON DUPLICATE KEY UPDATE {', '.join(sets)}"
    return f"{head} ON CONFLICT ({', '.join(key)}) DO UPDATE SET {', '.join(sets)}"


# json.dumps with options builds a new encoder per call; this is that encoder, built once.
_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dumps(value: Any) -> str:
    """JSON text for a JSON column (non-ASCII kept readable)."""
    return _DUMPS(value)


EVENT_COLUMNS: tuple[str, ...] = (
    "user_id", "thread_id", "idx", "event_id", "project_id", "agent_id",
    "ts", "role", "kind", "tool", "content", "attrs", "tokens",
)


def event_to_row(e: Event) -> tuple[Any, ...]:
    """Values in :data:`EVENT_COLUMNS` order."""
    return (e.user_id, e.thread_id, e.index, e.event_id, e.project_id, e.agent_id,
            e.ts, e.role, e.kind, e.tool, e.content, dumps(e.attrs), e.tokens)


def event_from_row(r: Sequence[Any]) -> Event:
    """Inverse of :func:`event_to_row`."""
    return Event(event_id=r[3], user_id=r[0], thread_id=r[1], ts=r[6], role=r[7], kind=r[8],
                 content=r[10], project_id=r[4], agent_id=r[5], index=int(r[2]), tool=r[9],
                 attrs=json.loads(r[11]), tokens=None if r[12] is None else int(r[12]))


MEMORY_COLUMNS: tuple[str, ...] = (
    "id", "user_id", "project_id", "kind", "summary", "source_thread_id",
    "source_start_index", "source_end_index", "tags", "query_hints", "retrieve_when",
    "importance", "status", "tier", "supersedes_memory_id", "facts", "metadata",
    "created_at", "updated_at",
)
#: Rewritten when the same memory id is upserted again; status/tier/superseded_by/usage are
#: owned by the lifecycle and kept.
MEMORY_DERIVED: tuple[str, ...] = tuple(
    c for c in MEMORY_COLUMNS if c not in ("id", "user_id", "status", "tier")
)
MEMORY_EXTRA: tuple[str, ...] = ("superseded_by", "hit_count", "last_used_at")


def observation_to_row(o: Observation, updated_at: str,
                       store: Callable[[str], Any] = str) -> tuple[Any, ...]:
    """Values in :data:`MEMORY_COLUMNS` order; ``store`` turns the query hints' and the
    metadata's JSON into what is stored (``stores.sql.packed.pack`` on SQLite: compressed,
    issue 49)."""
    r = o.source_range
    return (o.id, o.user_id, o.project_id, o.kind, o.summary, r.thread_id, r.start_index,
            r.end_index, dumps(list(o.tags)), store(dumps(list(o.query_hints))), o.retrieve_when,
            o.importance, o.status, o.tier, o.supersedes_memory_id,
            dumps([f.to_dict() for f in o.facts]), store(dumps(o.metadata)), o.created_at,
            updated_at)


def observation_from_row(r: Sequence[Any]) -> Observation:
    """Inverse of :func:`observation_to_row` (extra trailing columns are ignored)."""
    return Observation(
        id=r[0], user_id=r[1], project_id=r[2], kind=r[3], summary=r[4],
        source_range=SourceRange(r[5], int(r[6]), int(r[7])),
        tags=tuple(json.loads(r[8])), query_hints=tuple(json.loads(unpack(r[9]))),
        retrieve_when=r[10], importance=float(r[11]), status=r[12], tier=r[13],
        supersedes_memory_id=r[14], facts=tuple(Fact.from_dict(f) for f in json.loads(r[15])),
        metadata=json.loads(unpack(r[16])), created_at=r[17],
    )


def observations_from_rows(rows: Sequence[Sequence[Any]]) -> list[Observation]:
    """:func:`observation_from_row` of each row, reusing the memory decoded from an
    identical row before (recall reads the same memories over and over; the JSON columns
    cost most). The row's :data:`MEMORY_COLUMNS` part (``updated_at`` included, the usage
    counters left out) decides "identical", so a changed memory is decoded afresh. The
    memories are shared: callers derive new ones (``dataclasses.replace``), never mutate
    them."""
    out = []
    n = len(MEMORY_COLUMNS)
    for r in rows:
        key = tuple(r[:n])
        try:
            out.append(_decoded.get(key))
        except TypeError:  # an unhashable value from a driver (bytearray): decode it
            out.append(observation_from_row(key))
    return out


class DecodedRows:
    """An LRU of memories decoded from rows, keyed by the row's id, ``updated_at`` and the
    hash of all its values: the raw JSON texts are not kept beside their decoded values
    (an ``lru_cache`` keyed by the row held both: 20.1 KB a real-session memory, 15.6 KB
    now). Thread-safe; ``cache_clear`` empties it (forget)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._rows: dict[tuple[Any, Any, int], Observation] = {}
        self._lock = threading.Lock()

    def get(self, row: tuple[Any, ...]) -> Observation:
        """The memory of ``row`` (``MEMORY_COLUMNS`` values), decoded once."""
        key = (row[0], row[_UPDATED_AT], hash(row))  # TypeError: an unhashable value
        with self._lock:
            found = self._rows.pop(key, None)
            if found is not None:
                self._rows[key] = found  # most recently used last
                return found
        decoded = observation_from_row(row)
        with self._lock:
            self._rows[key] = decoded
            while len(self._rows) > self.maxsize:
                del self._rows[next(iter(self._rows))]
        return decoded

    def __len__(self) -> int:
        return len(self._rows)

    def cache_clear(self) -> None:
        """Drop every decoded memory."""
        with self._lock:
            self._rows.clear()


_UPDATED_AT = MEMORY_COLUMNS.index("updated_at")
#: decoded memories kept (recall's candidates repeat across requests)
DECODED_ROWS = 4096
_decoded = DecodedRows(DECODED_ROWS)


def memory_row_dict(r: Sequence[Any]) -> dict[str, Any]:
    """A full ``agent_memories`` row (MEMORY_COLUMNS + MEMORY_EXTRA), JSON decoded."""
    out = dict(zip(MEMORY_COLUMNS + MEMORY_EXTRA, r, strict=True))
    out["query_hints"], out["metadata"] = unpack(out["query_hints"]), unpack(out["metadata"])
    for name in ("tags", "query_hints", "facts", "metadata"):
        out[name] = json.loads(out[name])
    return out


CHUNK_COLUMNS: tuple[str, ...] = (
    "id", "memory_id", "user_id", "project_id", "thread_id", "event_id",
    "event_index", "char_start", "char_end", "text", "tokens",
)


def chunk_to_row(c: Chunk) -> tuple[Any, ...]:
    """Values in :data:`CHUNK_COLUMNS` order."""
    return tuple(getattr(c, name) for name in CHUNK_COLUMNS)


def chunk_from_row(r: Sequence[Any]) -> Chunk:
    """Inverse of :func:`chunk_to_row`."""
    return Chunk.from_dict(dict(zip(CHUNK_COLUMNS, r, strict=True)))


DEAD_LETTER_COLUMNS: tuple[str, ...] = (
    "received_at", "source", "reason", "field", "event_id", "user_id", "payload",
)


def dead_letter_to_row(d: DeadLetter) -> tuple[Any, ...]:
    """Values in :data:`DEAD_LETTER_COLUMNS` order."""
    return (d.received_at, d.source, d.reason, d.field, d.event_id, d.user_id, d.payload)


def dead_letter_from_row(r: Sequence[Any]) -> DeadLetter:
    """Inverse of :func:`dead_letter_to_row`."""
    return DeadLetter(received_at=r[0], source=r[1], reason=r[2], field=r[3],
                      event_id=r[4], user_id=r[5], payload=r[6])


AUDIT_COLUMNS: tuple[str, ...] = (
    "id", "memory_id", "user_id", "at", "actor", "field", "from_value", "to_value", "reason",
)


# --- statement text (``?`` placeholders; :meth:`Dialect.sql` rewrites them) ------------------

def marks(n: int) -> str:
    """``n`` comma-separated placeholders."""
    return ", ".join("?" * n)


def owner_only(mysql: bool) -> str:
    """The owner column of an ``id IN (...)`` statement on ``agent_memories``, kept out of
    the plan on SQLite: there ``user_id = ?`` makes the planner pick the (user_id, status)
    index over the primary key once the list holds a few ids, and scan every memory of the
    user (35 ms for 8 ids at 250,000 memories a tenant). ``+user_id`` is not indexable."""
    return "user_id" if mysql else "+user_id"


def insert_sql(table: str, columns: Sequence[str]) -> str:
    """A plain INSERT of ``columns``."""
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks(len(columns))})"


def select_sql(table: str, columns: Sequence[str]) -> str:
    """``SELECT columns FROM table`` (append WHERE / ORDER BY)."""
    return f"SELECT {', '.join(columns)} FROM {table}"


INSERT_EVENT = insert_sql("raw_events", EVENT_COLUMNS)
SELECT_EVENTS = select_sql("raw_events", EVENT_COLUMNS)
SELECT_MEMORIES = select_sql("agent_memories", MEMORY_COLUMNS + MEMORY_EXTRA)
SELECT_CHUNKS = select_sql("source_chunks", CHUNK_COLUMNS)
INSERT_AUDIT = insert_sql("memory_audit", AUDIT_COLUMNS[1:])
SELECT_AUDIT = select_sql("memory_audit", AUDIT_COLUMNS)
INSERT_DEAD_LETTER = insert_sql("dead_letters", DEAD_LETTER_COLUMNS)
SELECT_DEAD_LETTERS = select_sql("dead_letters", DEAD_LETTER_COLUMNS)
LOG_COLUMNS: tuple[str, ...] = ("user_id", "event_id", "thread_key", "payload", "accepted_at")
INSERT_LOG = insert_sql("event_log", LOG_COLUMNS)

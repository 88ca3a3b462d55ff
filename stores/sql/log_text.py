"""Issue 49: an event's text stored once, in the embedded log.

The embedded event log (``event_log``, :mod:`stores.sql.event_log`) keeps each accepted
event's payload as received (JSON; the processors, replay and the fair scheduler read it).
A ``raw_events`` row of the same event (same user, same event id) *in the same SQLite
file* stores :data:`VIEW` (``''``) as its ``content`` and the log entry's ``seq`` in its
``log_seq`` column: a *view* into the log, read back through :func:`content_sql` (the
payload's ``content`` field, by the log's primary key). Every read of ``raw_events.content``
goes through that expression (``select_events``, ``stores.sql.chunk_text``,
``stores.sql.explore``). A row with ``log_seq`` NULL keeps its content, as before: an
event written where its file holds no log entry whose content is the event's (a replayed
generation's own file, ``generations/<name>/``; MySQL/TiDB, whose log is Kafka), or a
restore from cold storage whose log entry was erased.

What keeps it exact:

* the write checks each event against its log entry as the table holds it, inside the
  writing transaction (:func:`stored_rows`): a view is only written where the payload's
  ``content`` (as SQLite's ``json_extract`` reads it, the same expression the reads use)
  is the event's content;
* log payloads are never updated (an UPDATE of the log only sets ``processed`` or, in the
  schema 2 upgrade, ``thread_key``), only deleted, by an erasure, which deletes the raw
  events of the same scope in the same transaction (``stores.sql.forget``): the text is
  erased once, everywhere; an archive deletes raw events and keeps the log, so its views
  simply go;
* a view whose log entry is gone all the same reads as a missing row
  (:func:`present`), never as another text;
* tenants: the log is looked up by the event's own user id and event id, unique per user
  in both tables.

SQLite only: the column is added by the schema 4 upgrade (``stores.sql.migrate``), which
also turns the existing rows into views; MySQL/TiDB tables are left as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import SqlDatabase, id_text
from breadcrumb.stores.sql.packed import SQL_FUNCTION
from breadcrumb.stores.sql.schema import Dialect
from breadcrumb.topics.records import Event

#: the ``content`` of a raw event row that is a view into its log entry
VIEW = ""
_PART = 400  # ids per IN list
#: a log payload may be stored compressed: read through bc_text() (stores.sql.packed)
_LOG_PAYLOAD = f"{SQL_FUNCTION}(payload)"
_LOG_CONTENT = f"json_extract({_LOG_PAYLOAD}, '$.content')"
#: ``raw_events.content`` as stored or, for a view, read from its log entry (NULL when gone)
_SQLITE_CONTENT = (f"CASE WHEN raw_events.log_seq IS NULL THEN raw_events.content ELSE "
                   f"(SELECT {_LOG_CONTENT} FROM event_log WHERE event_log.seq = "
                   f"raw_events.log_seq) END")
_CONTENT_AT = s.EVENT_COLUMNS.index("content")
INSERT_EVENT_VIEW = s.insert_sql("raw_events", (*s.EVENT_COLUMNS, "log_seq"))


def content_sql(dialect: Dialect) -> str:
    """The SQL expression of an event's content in a query over ``raw_events`` (not aliased)."""
    return "content" if dialect.mysql else _SQLITE_CONTENT


def select_events(dialect: Dialect) -> str:
    """``SELECT`` of :data:`schema.EVENT_COLUMNS` from ``raw_events`` (append WHERE / ORDER
    BY), the content read through :func:`content_sql`."""
    if dialect.mysql:
        return s.SELECT_EVENTS
    cols = [_SQLITE_CONTENT if c == "content" else c for c in s.EVENT_COLUMNS]
    return f"SELECT {', '.join(cols)} FROM raw_events"


def present(rows: Iterable[Sequence[Any]]) -> list[Sequence[Any]]:
    """The rows of :func:`select_events` whose content is there (a view whose log entry is
    gone reads as a missing row)."""
    return [r for r in rows if r[_CONTENT_AT] is not None]


def log_contents(db: SqlDatabase, keys: Iterable[tuple[str, str]]
                 ) -> dict[tuple[str, str], tuple[int, Any]]:
    """``(seq, content)`` of the log entry of each ``(user_id, event_id)`` among ``keys``
    (content as :func:`content_sql` reads it; entries whose payload is not JSON left out)."""
    by_user: dict[str, list[str]] = {}
    for user_id, event_id in dict.fromkeys(keys):
        by_user.setdefault(user_id, []).append(event_id)
    out: dict[tuple[str, str], tuple[int, Any]] = {}
    for user_id, event_ids in by_user.items():
        for start in range(0, len(event_ids), _PART):
            part = event_ids[start:start + _PART]
            rows = db.read(f"SELECT seq, event_id, {_LOG_CONTENT} FROM event_log WHERE "
                           f"user_id = ? AND event_id IN ({s.marks(len(part))}) AND "
                           f"json_valid({_LOG_PAYLOAD})", (user_id, *part))
            out.update(((user_id, id_text(e)), (int(q), c)) for q, e, c in rows)
    return out


def stored_rows(db: SqlDatabase, events: Sequence[Event]) -> list[tuple[Any, ...]]:
    """The rows of :data:`INSERT_EVENT_VIEW` for ``events``: a view where the log entry of
    the event, as stored now, holds its content; the content otherwise."""
    logged = log_contents(db, ((e.user_id, e.event_id) for e in events))
    out = []
    for e in events:
        row = s.event_to_row(e)
        seq, content = logged.get((e.user_id, e.event_id), (None, None))
        if seq is not None and isinstance(content, str) and content == e.content:
            out.append((*row[:_CONTENT_AT], VIEW, *row[_CONTENT_AT + 1:], seq))
        else:
            out.append((*row, None))
    return out


def add_column(db: Any) -> None:
    """Add ``raw_events.log_seq`` (SQLite) when the table lacks it (schema 4)."""
    cols = {str(r[1]) for r in db.fetch("PRAGMA table_info(raw_events)")}
    if "log_seq" not in cols:
        db.execute("ALTER TABLE raw_events ADD COLUMN log_seq INTEGER")


def events_as_views(db: Any, slice_rows: int) -> int:
    """Schema 4 (SQLite): each stored event whose log entry holds its content becomes a
    view, in slices of ``slice_rows`` rows; returns the rows converted."""
    add_column(db)
    done, after = 0, 0
    while True:
        rows = db.fetch(
            f"SELECT e.rowid, l.seq, e.content, json_extract({SQL_FUNCTION}(l.payload), "
            "'$.content') FROM raw_events e JOIN event_log l ON l.user_id = e.user_id AND "
            f"l.event_id = e.event_id AND json_valid({SQL_FUNCTION}(l.payload)) "
            "WHERE e.rowid > ? AND e.log_seq IS NULL ORDER BY e.rowid LIMIT ?",
            (after, slice_rows))
        if not rows:
            return done
        after = int(rows[-1][0])
        views = [(VIEW, int(r[1]), int(r[0])) for r in rows
                 if isinstance(r[3], str) and r[3] == r[2]]
        if views:
            db.execute_many("UPDATE raw_events SET content = ?, log_seq = ? WHERE rowid = ?",
                            views)
            done += len(views)

"""Issue 49: a chunk's text is stored once, in its raw event.

A chunk is a verbatim slice of its event (``processors.chunker``:
``event.content[char_start:char_end] == chunk.text``, never empty). A ``source_chunks``
row whose slice of the ``raw_events`` row (same user, same event id) is its text stores
:data:`VIEW` (``""``) in its ``text`` column: a *view* into the event, read back through
:func:`with_texts`, the one function every chunk read goes through. A row whose text is not
that slice (its event is not in the table: cold, another store; or a chunk that is not a
slice) keeps its text, as before. Both kinds of row are read the same way.

What keeps it exact:

* the write checks each chunk against its event as the table holds it, inside the
  writing transaction (:func:`stored_texts`): a view is only written where the slice is
  the text;
* events are never updated in place (``(user_id, event_id)`` is unique, an insert of an
  existing one is refused); they are only deleted, and every delete of events deletes the
  chunks cut from them with them (forget: the same scope's chunks; archive: the memory's
  chunks, and any other memory's view into those events is given its text first,
  :func:`materialize`), so an erasure erases the text once, everywhere;
* a view whose event is gone all the same (a store changed by hand) is read as a missing
  row, never as another text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import SqlDatabase, id_text
from breadcrumb.stores.sql.log_text import content_sql
from breadcrumb.topics.records import Chunk

#: the ``text`` of a chunk row that is a view into its event (a real chunk is never empty)
VIEW = ""
_TEXT = s.CHUNK_COLUMNS.index("text")
_START, _END = s.CHUNK_COLUMNS.index("char_start"), s.CHUNK_COLUMNS.index("char_end")
_USER, _EVENT = s.CHUNK_COLUMNS.index("user_id"), s.CHUNK_COLUMNS.index("event_id")
_PART = 400  # ids per IN list


def event_contents(db: SqlDatabase, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The content of each stored ``(user_id, event_id)`` among ``keys`` (missing ones
    left out); read through ``db.read`` (the writer's transaction, when it holds it)."""
    by_user: dict[str, list[str]] = {}
    for user_id, event_id in dict.fromkeys(keys):
        by_user.setdefault(user_id, []).append(event_id)
    out: dict[tuple[str, str], str] = {}
    content = content_sql(db.dialect)  # issue 49: a raw event's content may be in the log
    for user_id, event_ids in by_user.items():
        for start in range(0, len(event_ids), _PART):
            part = event_ids[start:start + _PART]
            rows = db.read(f"SELECT event_id, {content} FROM raw_events WHERE user_id = ? "
                           f"AND event_id IN ({s.marks(len(part))})", (user_id, *part))
            out.update(((user_id, id_text(e)), str(c)) for e, c in rows if c is not None)
    return out


def is_slice(content: str | None, start: int, end: int, text: str) -> bool:
    """Whether ``text`` is the non-empty slice ``content[start:end]``."""
    return (content is not None and bool(text) and 0 <= start < end <= len(content)
            and end - start == len(text) and content[start:end] == text)


def stored_texts(db: SqlDatabase, chunks: Sequence[Chunk]) -> list[str]:
    """What each chunk's ``text`` column holds: :data:`VIEW` where its event, as stored
    now, holds it at its offsets; its text otherwise."""
    contents = event_contents(db, ((c.user_id, c.event_id) for c in chunks))
    return [VIEW if is_slice(contents.get((c.user_id, c.event_id)), c.char_start, c.char_end,
                             c.text) else c.text for c in chunks]


def chunk_rows(db: SqlDatabase, chunks: Sequence[Chunk]) -> list[tuple[Any, ...]]:
    """The ``CHUNK_COLUMNS`` rows of ``chunks`` as stored (views where they can be)."""
    texts = stored_texts(db, chunks)
    return [(*row[:_TEXT], text, *row[_TEXT + 1:])
            for row, text in zip(map(s.chunk_to_row, chunks), texts, strict=True)]


def with_texts(db: SqlDatabase, rows: Sequence[Sequence[Any]]) -> list[Chunk]:
    """Chunks of ``source_chunks`` rows (``CHUNK_COLUMNS``): a view's text is its event's
    slice; a view whose event is not stored is left out (as a missing row)."""
    views = [(id_text(r[_USER]), id_text(r[_EVENT])) for r in rows if r[_TEXT] == VIEW]
    contents = event_contents(db, views) if views else {}
    out: list[Chunk] = []
    for r in rows:
        if r[_TEXT] != VIEW:
            out.append(s.chunk_from_row(r))
            continue
        content = contents.get((id_text(r[_USER]), id_text(r[_EVENT])))
        start, end = int(r[_START]), int(r[_END])
        if content is None or not 0 <= start < end <= len(content):
            continue
        row = list(r)
        row[_TEXT] = content[start:end]
        out.append(s.chunk_from_row(row))
    return out


def materialize(db: SqlDatabase, user_id: str, thread_id: str, start: int, end: int) -> int:
    """Give the view rows cut from the thread's events ``start..end`` their text, before
    those events are deleted while chunks of them stay (an archive: the memory's own chunks
    are deleted first; another memory whose range overlaps keeps its chunks); returns the
    rows written. The memories are found by their ranges (a user's memory rows, ~1 per 7
    events, are scanned rather than its chunk rows, ~3 an event). Call inside the deleting
    transaction."""
    owners = db.read("SELECT id FROM agent_memories WHERE user_id = ? AND source_thread_id = ? "
                     "AND source_start_index <= ? AND source_end_index >= ?",
                     (user_id, thread_id, end, start))
    written = 0
    for (memory_id,) in owners:
        rows = db.read(f"{s.SELECT_CHUNKS} WHERE user_id = ? AND memory_id = ? AND text = ? "
                       "AND event_index >= ? AND event_index <= ?",
                       (user_id, id_text(memory_id), VIEW, start, end))
        for chunk in with_texts(db, rows):
            db.execute("UPDATE source_chunks SET text = ? WHERE id = ?", (chunk.text, chunk.id))
            written += 1
    return written

"""Issue 49: long texts of the embedded store kept compressed.

The embedded store writes long texts that are read whole, never searched by SQL for their
words: an event log entry's payload (``event_log.payload``, JSON: the event as accepted,
its content most of it), a memory's query hints (``agent_memories.query_hints``, a JSON
list of every exact value of its range, 5.5 KB a memory on the store-cost bench's mix) and
its metadata (``agent_memories.metadata``, 1.3 KB: files, symbols, facts it supersedes).
:func:`pack` keeps such a text as a zlib stream in a BLOB when that is shorter (level 6;
2.5x on the bench's events); :func:`unpack` reads either kind back, so a data dir written
before (TEXT values) reads as it did and nothing needs converting.

SQL reads the texts through the function :data:`SQL_FUNCTION` (``bc_text(value)``: the text
of a value as :func:`unpack` reads it), which every connection of the embedded store
registers (:func:`register`); ``json_extract(bc_text(payload), '$.content')`` is the
content of a log entry whichever way it is stored.

SQLite only: MySQL/TiDB columns are TEXT/JSON, written and read as before (a MySQL driver may
still hand back bytes for a text column: bytes that are not a zlib stream are UTF-8 text).
Compression is lossless: ``unpack(pack(t)) == t`` for every string, NULs and surrogate-free
Unicode included (a string with lone surrogates, which UTF-8 cannot hold, is kept as text).
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Callable

#: the SQL function that reads a packed or plain text (registered on each connection)
SQL_FUNCTION = "bc_text"
#: texts shorter than this stay text (a zlib stream of a short text is rarely shorter)
MIN_CHARS = 160
_LEVEL = 6


def pack(text: str) -> str | bytes:
    """``text`` as stored: a zlib stream when that is shorter, else ``text`` itself."""
    if len(text) < MIN_CHARS:
        return text
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep the text as it is
        return text
    packed = zlib.compress(raw, _LEVEL)
    return packed if len(packed) < len(raw) else text


def unpack(value: str | bytes | bytearray | memoryview) -> str:
    """The text of a stored value: a zlib stream inflated, UTF-8 bytes decoded, text as is."""
    if isinstance(value, str):
        return value
    data = bytes(value)
    if data[:1] == b"\x78":  # the zlib header's first byte (deflate, 32 KB window)
        try:
            return zlib.decompress(data).decode("utf-8")
        except zlib.error:
            pass  # bytes of a text that happens to start with "x"
    return data.decode("utf-8")


def packer(mysql: bool) -> Callable[[str], str | bytes]:
    """What a dialect stores a long text as: :func:`pack` on SQLite, the text on MySQL."""
    return str if mysql else pack


def _sql_text(value: str | bytes | None) -> str | None:
    return None if value is None else unpack(value)


def register(conn: sqlite3.Connection) -> None:
    """Register :data:`SQL_FUNCTION` on a connection (deterministic: usable in indexes and
    views, and SQLite may cache its result within a statement)."""
    conn.create_function(SQL_FUNCTION, 1, _sql_text, deterministic=True)

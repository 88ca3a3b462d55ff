"""SQL in a text: its statements, tables and columns (:mod:`.hints`' SQL kinds).

A statement runs to its ``;`` when one follows in the same paragraph, else to the end of its
line; lower-case SQL counts only when it ends with a ``;`` (prose says "select" and "from"
too). Every value is a verbatim substring of the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_F = re.ASCII | re.MULTILINE
#: The kinds :func:`sql_values` names.
SQL_KINDS = frozenset({"sql", "sql_table", "sql_column"})

_SQL_START = re.compile(
    r"\b(?:CREATE[ \t]+(?:UNIQUE[ \t]+)?(?:TABLE|INDEX)|ALTER[ \t]+TABLE|INSERT[ \t]+INTO|SELECT"
    r"|UPDATE[ \t]+\w+[ \t]+SET|DELETE[ \t]+FROM|DROP[ \t]+TABLE)\b",
    _F,
)
_SQL_START_LOWER = re.compile(
    r"\b(?:create\s+table|alter\s+table|insert\s+into|select|delete\s+from)\b", _F
)
_SQL_TABLE = re.compile(
    r"\b(?i:TABLE(?:\s+IF\s+(?:NOT\s+)?EXISTS)?|FROM|JOIN|INTO|UPDATE|ON)\s+([A-Za-z_][\w.]*)", _F
)
_SQL_COLUMN = re.compile(
    r"(?:^|[(,])\s*[+]?\s*([A-Za-z_]\w*)\s+(?=[A-Za-z])"  # CREATE TABLE column definitions
    r"|\b([A-Za-z_][\w.]*)\s*(?:=|<>|!=|>=|<=|<|>|\s(?i:IN|LIKE|IS|BETWEEN)\b)"
    r"|\b(?i:ADD\s+(?:COLUMN\s+)?)([A-Za-z_]\w*)",
    _F,
)
_SQL_SELECT_LIST = re.compile(r"\b(?i:SELECT)\s+(?:(?i:DISTINCT)\s+)?(.*?)\s(?i:FROM)\b", _F | re.S)
_SQL_WORDS = frozenset(
    "select from where and or not null table create alter insert into values update set delete"
    " join on as by order group limit primary key unique constraint foreign references check"
    " default index if exists now interval in is like between count sum max min avg distinct"
    " case when then else end desc asc add column inner left right outer having returning drop"
    " true false cascade".split()
)
_MAX_SQL_STATEMENT = 400


def _sql_statements(text: str) -> Iterator[tuple[int, int]]:
    """Spans of SQL statements: to ``;`` when one follows on the same paragraph, else EOL."""
    starts = [m.start() for m in _SQL_START.finditer(text)]
    for m in _SQL_START_LOWER.finditer(text):
        semi = text.find(";", m.start(), m.start() + _MAX_SQL_STATEMENT)
        if semi > 0 and "\n\n" not in text[m.start():semi]:
            starts.append(m.start())
    last_end = -1
    for start in sorted(set(starts)):
        if start < last_end:
            continue
        semi = text.find(";", start, start + _MAX_SQL_STATEMENT)
        eol = text.find("\n", start)
        eol = len(text) if eol < 0 else eol
        end = semi + 1 if semi > 0 and "\n\n" not in text[start:semi] else eol
        body = text[start:end]
        if body.startswith(("SELECT", "select")) and not re.search(r"(?i)\bfrom\b", body):
            continue
        last_end = end
        yield start, end


def _statement_values(text: str) -> Iterator[tuple[int, str, str]]:
    for start, end in _sql_statements(text):
        stmt = text[start:end]
        if len(stmt) <= _MAX_SQL_STATEMENT:
            yield start, "sql", stmt
        for m in _SQL_TABLE.finditer(stmt):
            yield start + m.start(1), "sql_table", m.group(1)
        for m in _SQL_COLUMN.finditer(stmt):
            g = next(i for i in (1, 2, 3) if m.group(i) is not None)
            yield start + m.start(g), "sql_column", m.group(g)
        for m in _SQL_SELECT_LIST.finditer(stmt):
            for col in re.finditer(r"[A-Za-z_][\w.]*(?![\w(])", m.group(1)):
                yield start + m.start(1) + col.start(), "sql_column", col.group(0)


def sql_values(text: str) -> Iterator[tuple[int, str, str]]:
    """``(offset, kind, value)`` of every statement, table and column in ``text``; SQL's
    own words (``select``, ``count``, ``now`` …) are no table or column."""
    for pos, kind, value in _statement_values(text):
        if value.lower() not in _SQL_WORDS:
            yield pos, kind, value

"""The current value of a key: among a thread's edits that assign one key, the newest.

``+LOGIN_RETRIES = 14`` in one edit and ``+LOGIN_RETRIES = 21`` in a later one: the
second is what the setting is now, the first is history. Without a question for history
(``include_superseded``, "first", "previous", "before we changed"), the replaced
assignments leave the candidates; with one they stay, and the evidence names their values
in ``superseded_values``. Only lines of edits count (an edit event, or a diff's ``+`` /
``-`` line): a log printing an old value is what happened, not a claim about now. A diff's
removed line is replaced by definition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from breadcrumb.query_api.recall.extract.learned.features import Candidate

#: ``KEY = value``, ``KEY: value``, ``export KEY=value``, ``"KEY": value``, in an edit; a
#: key is a setting's name in capitals (``LOGIN_RETRIES``, ``DB_PORT``): a lower-case key
#: (``image:``, ``port:``, ``name =``) names a field that many services of one file have
_ASSIGN = re.compile(r"""^\s*([+-])?\s*(?:export\s+)?["']?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"""
                     r"""|[A-Z][A-Z0-9]{2,})["']?\s*(?::(?!:)|=(?!=))\s*(.+?)\s*[,;]?\s*$""")


@dataclass(frozen=True, slots=True)
class Assignment:
    """A key given a value by a line of an edit."""

    key: str
    value: str
    removed: bool


def assignment(line: Candidate) -> Assignment | None:
    """The assignment ``line`` makes, when it is a line of an edit that assigns a key."""
    if line.kind != "file_edit" and not line.text.startswith(("+", "-")):
        return None
    if line.text.startswith(("+++", "---")):
        return None
    m = _ASSIGN.match(line.text)
    if m is None or not m.group(3):
        return None
    return Assignment(m.group(2), m.group(3).strip("\"'"), m.group(1) == "-")


def replaced(lines: Sequence[Candidate], threads: Mapping[str, str]) -> dict[int, str]:
    """Position in ``lines`` -> the value of an assignment a later edit of the same key,
    in the same thread (``threads``: memory id -> its thread) and file (the header above
    the line, where one names it), replaced (or a diff removed)."""
    # (thread and file, key) -> when, value
    newest: dict[tuple[tuple[str, str], str], tuple[int, int, str]] = {}
    found: list[tuple[int, tuple[str, str], Assignment]] = []
    for i, line in enumerate(lines):
        a = assignment(line)
        if a is None:
            continue
        thread = (threads.get(line.memory_id, line.memory_id), line.header)  # and its file
        found.append((i, thread, a))
        if not a.removed:
            when = (line.event_index, line.start)
            old = newest.get((thread, a.key))
            if old is None or when > old[:2]:
                newest[(thread, a.key)] = (*when, a.value)
    out: dict[int, str] = {}
    for i, thread, a in found:
        now = newest.get((thread, a.key))
        if now is not None and now[2] != a.value:
            out[i] = a.value
    return out


"""Lines spoken by a person the question names ("What did Melanie paint recently?").

Transcripts keep their speaker as a line prefix (``"Melanie: We love painting ..."``):
chat exports, meeting notes, imported conversations. A question that names a speaker
is mostly answered by that speaker's own lines (first person), less by lines that only
address them ("Caroline: Thanks, Melanie!"), though both hold the name. Semantic Extract
lifts the named speaker's lines a little (:data:`.scoring.SEMANTIC`, ``speaker``).

A prefix counts as a speaker only when it is one to three capitalised words, it starts
at least :data:`MIN_LINES` candidate lines (a log's ``Error:`` once is no speaker), and
the question writes the name capitalised as a word of its own.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

MIN_LINES = 3
_PREFIX = re.compile(r"^\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s")


def speaker(text: str) -> str | None:
    """The ``Name:`` prefix of a transcript line, if it has one."""
    hit = _PREFIX.match(text)
    return hit.group(1) if hit else None


def named_speakers(question: str, lines: Iterable[str]) -> frozenset[str]:
    """Speakers of ``lines`` (prefix on >= MIN_LINES lines) that the question names."""
    counts = Counter(s for s in map(speaker, lines) if s)
    return frozenset(name for name, n in counts.items() if n >= MIN_LINES
                     and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", question))

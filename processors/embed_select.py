"""Embed less: which chunks of a memory get a dense vector.

A long event (in practice a tool output: a test log, a build, a 2,000-line dump) is cut
into many chunks; embedding each costs model time and adds little: the middle of a log is
mostly repetitive progress lines, and the dense channel finds a log by its head, its tail
and its error and summary lines. So for an event of more than :data:`LONG_EVENT_CHUNKS`
chunks only these get a dense vector:

* its first :data:`HEAD_CHUNKS` and last :data:`TAIL_CHUNKS` chunks;
* up to :data:`MAX_INFORMATIVE_CHUNKS` chunks in between that hold an *informative* line:
  one with an error word (``processors.hints.ERROR_WORDS``: error, fail, exception,
  traceback, ...) or a summary line (a line opening with pytest's ``=== 3 failed, 10
  passed ===``, "Summary", "Total", "Finished", "Ran 12 tests", "4 passed", ...); when more
  hold one, an evenly spread selection.

Every other chunk is stored as before (SQL row, sparse vector): still lexically
searchable, still in the source ranges recall returns — only its dense vector is left
out (``VectorIndex.upsert_chunks`` takes ``None``). Events of up to
:data:`LONG_EVENT_CHUNKS` chunks are embedded whole. Pure and deterministic: the same
chunks always give the same mask (replays write the same points).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from breadcrumb.processors.hints import ERROR_WORDS
from breadcrumb.topics.records import Chunk

#: Events cut into more chunks than this are "long" (about 1,000 tokens at 256 per chunk).
LONG_EVENT_CHUNKS = 4
HEAD_CHUNKS = 2
TAIL_CHUNKS = 1
MAX_INFORMATIVE_CHUNKS = 6

_SUMMARY_LINE = (
    r"[ \t]*(?:={3,}[^\n]*\w[^\n]*={3,}"  # pytest's "==== 3 failed, 10 passed ===="
    r"|(?:summary|totals?|finished|completed|succeeded|results?|ran \d+ tests?"
    r"|\d+ (?:passed|failed|errors?|warnings?|tests?))\b)"
)
#: A summary line: ``(?im)^`` + the line, as the first line (match) or after a newline
#: (search): the same lines, found ~3x faster -- a search for a pattern that opens with a
#: literal "\n" jumps from newline to newline, where ``^`` is tried at every character.
_SUMMARY_FIRST = re.compile("(?i)" + _SUMMARY_LINE)
_SUMMARY_AFTER_NEWLINE = re.compile(r"(?i)\n" + _SUMMARY_LINE)
_ERROR = re.compile("|".join(re.escape(w) for w in ERROR_WORDS), re.IGNORECASE)


def informative(text: str) -> bool:
    """True when ``text`` holds an error word or a summary line."""
    if text.isascii():  # ASCII: case-insensitive is lowercasing, substring search is C
        lowered = text.lower()
        has_error = any(word in lowered for word in ERROR_WORDS)
    else:  # the regex's Unicode case-insensitive matching, as it always was
        has_error = _ERROR.search(text) is not None
    return has_error or _SUMMARY_FIRST.match(text) is not None or \
        _SUMMARY_AFTER_NEWLINE.search(text) is not None


def dense_mask(chunks: Sequence[Chunk]) -> list[bool]:
    """For each chunk (in order), whether it gets a dense vector (see the module doc)."""
    mask = [True] * len(chunks)
    for positions in _by_event(chunks):
        if len(positions) <= LONG_EVENT_CHUNKS:
            continue
        middle = positions[HEAD_CHUNKS : len(positions) - TAIL_CHUNKS]
        keep = [p for p in middle if informative(chunks[p].text)]
        if len(keep) > MAX_INFORMATIVE_CHUNKS:
            step = len(keep) / MAX_INFORMATIVE_CHUNKS
            keep = [keep[int(i * step)] for i in range(MAX_INFORMATIVE_CHUNKS)]
        chosen = set(keep)
        for p in middle:
            mask[p] = p in chosen
    return mask


def _by_event(chunks: Sequence[Chunk]) -> list[list[int]]:
    """Positions of the chunks of each event, in order (an event's chunks are adjacent,
    but grouping by id keeps the mask right for any order)."""
    groups: dict[str, list[int]] = {}
    for position, chunk in enumerate(chunks):
        groups.setdefault(chunk.event_id, []).append(position)
    return list(groups.values())

"""Extract: cut only the lines that answer, verbatim, from a range's raw events."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from processors.lexical import lexical_terms
from topics.records import Event

_FAILURE = re.compile(r"(FAIL|ERROR|Error|Exception|Traceback|assert|失敗|エラー)")
_FAILURE_ASK = re.compile(r"(fail|error|broke|crash|exception|失敗|エラー|落ち)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Line:
    """One line of one event, located by character offsets into its content."""

    event_id: str
    event_index: int
    start: int
    end: int
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class Extract:
    """The chosen lines (in source order) and their cost."""

    lines: tuple[Line, ...]
    tokens: int

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    @property
    def event_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for line in self.lines:
            seen.setdefault(line.event_id, None)
        return list(seen)


def split_lines(event: Event) -> list[tuple[int, int, str]]:
    """(start, end, text) of every non-blank line; ``content[start:end] == text``."""
    out: list[tuple[int, int, str]] = []
    pos = 0
    for raw in event.content.splitlines(keepends=True):
        text = raw.rstrip("\r\n")
        if text.strip():
            out.append((pos, pos + len(text), text))
        pos += len(raw)
    return out


def score_lines(query: str, events: Sequence[Event]) -> list[Line]:
    """Every line scored by overlap with the query's terms (failures boosted on failure asks)."""
    terms = set(lexical_terms(query))
    wants_failure = bool(_FAILURE_ASK.search(query))
    lines: list[Line] = []
    for event in events:
        for start, end, text in split_lines(event):
            line_terms = set(lexical_terms(text)) if len(text) < 4000 else set()
            score = float(len(terms & line_terms))
            if wants_failure and _FAILURE.search(text):
                score += 2.0
            if score > 0:
                idx = event.index if event.index is not None else -1
                lines.append(Line(event.event_id, idx, start, end, text, score))
    return lines


def extract_lines(
    query: str,
    events: Sequence[Event],
    max_tokens: int,
    count_tokens: Callable[[str], int],
) -> Extract:
    """The best-scoring lines that fit in ``max_tokens``, returned in source order."""
    ranked = sorted(
        score_lines(query, events), key=lambda ln: (-ln.score, ln.event_index, ln.start)
    )
    chosen: list[Line] = []
    used = 0
    for line in ranked:
        cost = count_tokens(line.text)
        if used + cost > max_tokens:
            continue
        chosen.append(line)
        used += cost
    chosen.sort(key=lambda ln: (ln.event_index, ln.start))
    return Extract(tuple(chosen), used)

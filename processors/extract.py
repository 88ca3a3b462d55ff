"""Extract: cut only the lines that answer, verbatim, from a range's events or chunks.

A line scores by the weighted query terms it holds (stopwords and particles dropped,
see :func:`processors.lexical.query_terms`), plus boosts for holding the *kind* of
exact value the question asks for (regex, port, SQL, ...; read with
:func:`processors.hints.extract_typed_values`), for failure lines on failure
questions, for lines a file edit added and for decisions. Lines that repeat one shape
many times (2,000 ``PASSED`` lines, 40 ``✓ accepts userN@…`` lines) are damped. Only
lines within :data:`RELATIVE_THRESHOLD` of the best line are kept, at most
``max_lines`` of them, within ``max_tokens``. Nothing is ever rewritten: every line
is a slice of stored content, located by event id and character offsets.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from breadcrumb.processors.decide import QueryIntent, analyze_query
from breadcrumb.processors.hints import extract_typed_values
from breadcrumb.processors.lexical import lexical_terms, query_terms
from breadcrumb.topics.records import Chunk, Event

_FAILURE = re.compile(r"(FAIL|ERROR|Error|Exception|Traceback|assert|panic|失敗|エラー)")
_DECISION = re.compile(
    r"(?i)\b(decid\w*|decision|agreed|let'?s go with|going with|settled on|chose)\b"
    r"|決定|決め|採用|にします"
)
_DIFF_HEADER = re.compile(r"^(---|\+\+\+) |^@@")
_SHAPE_NOISE = re.compile(r"[\d\s]+")

RELATIVE_THRESHOLD = 0.5
KIND_BOOST = 2.0
FAILURE_BOOST = 2.0
ADDED_LINE_BOOST = 1.0
REMOVED_LINE_PENALTY = 0.5
DECISION_BOOST = 0.5
REPEAT_DAMPING_FROM = 4  # a line shape seen this often is damped
TYPED_SCAN_LIMIT = 64  # typed values are read for this many best lines only
MAX_LINE_CHARS = 4000


@dataclass(frozen=True, slots=True)
class Passage:
    """A verbatim piece of one event: the whole content, or a stored chunk of it."""

    event_id: str
    event_index: int
    offset: int  # where ``text`` starts in the event's content
    text: str
    kind: str = ""
    role: str = ""


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
    best_score: float = 0.0

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    @property
    def event_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for line in self.lines:
            seen.setdefault(line.event_id, None)
        return list(seen)


def passages_from_events(events: Iterable[Event]) -> list[Passage]:
    """Every event as one passage (offset 0)."""
    return [
        Passage(e.event_id, e.index if e.index is not None else -1, 0, e.content, e.kind, e.role)
        for e in events
    ]


def passages_from_chunks(chunks: Iterable[Chunk]) -> list[Passage]:
    """Stored chunks as passages (their text is ``content[char_start:char_end]``)."""
    return [Passage(c.event_id, c.event_index, c.char_start, c.text) for c in chunks]


def split_lines(event: Event | Passage) -> list[tuple[int, int, str]]:
    """(start, end, text) of every non-blank line; ``content[start:end] == text``."""
    text, base = (event.content, 0) if isinstance(event, Event) else (event.text, event.offset)
    out: list[tuple[int, int, str]] = []
    pos = 0
    for raw in text.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        if line.strip():
            out.append((base + pos, base + pos + len(line), line))
        pos += len(raw)
    return out


def score_lines(
    query: str, items: Sequence[Event | Passage], intent: QueryIntent | None = None
) -> list[Line]:
    """Every line that matches the query, scored (see the module docstring)."""
    intent = intent or analyze_query(query)
    terms = query_terms(query)
    found: list[tuple[Passage, int, int, str, float]] = []
    for passage in _as_passages(items):
        for start, end, text in split_lines(passage):
            if _DIFF_HEADER.match(text):
                continue
            base = _line_score(text, passage, terms, intent)
            if base > 0:
                found.append((passage, start, end, text, base))
    shapes = Counter(_shape(text) for _p, _s, _e, text, _b in found)
    lines = [
        Line(p.event_id, p.event_index, s, e, text, _damped(b, shapes[_shape(text)]))
        for p, s, e, text, b in found
    ]
    return _kind_boosted(lines, intent)


def _as_passages(items: Sequence[Event | Passage]) -> list[Passage]:
    return [i if isinstance(i, Passage) else passages_from_events([i])[0] for i in items]


def _line_score(text: str, passage: Passage, terms: dict[str, float], intent: QueryIntent) -> float:
    line_terms = set(lexical_terms(text[:MAX_LINE_CHARS]))
    score = sum(w for t, w in terms.items() if t in line_terms)
    if intent.failure and _FAILURE.search(text):
        score += FAILURE_BOOST
    if score <= 0:
        return 0.0
    if passage.kind == "file_edit" and text.startswith("+"):
        score += ADDED_LINE_BOOST
    elif passage.kind == "file_edit" and text.startswith("-"):
        score -= REMOVED_LINE_PENALTY
    if _DECISION.search(text[:MAX_LINE_CHARS]):
        score += DECISION_BOOST
    return max(score, 0.0)


def _shape(text: str) -> str:
    """A line without its digits and spaces: ``test_case_0001 PASSED [ 0%]`` ~ ``..._0002``."""
    return _SHAPE_NOISE.sub("", text)


def _damped(score: float, repeats: int) -> float:
    if repeats < REPEAT_DAMPING_FROM:
        return score
    return score / (1.0 + math.log2(repeats))


def _kind_boosted(lines: list[Line], intent: QueryIntent) -> list[Line]:
    """Boost the best lines that hold a value of a kind the question asks for."""
    if not intent.kinds:
        return lines
    order = sorted(range(len(lines)), key=lambda i: -lines[i].score)[:TYPED_SCAN_LIMIT]
    out = list(lines)
    for i in order:
        line = lines[i]
        kinds = {k for k, _v in extract_typed_values(line.text[:MAX_LINE_CHARS])}
        if kinds & intent.kinds:
            out[i] = Line(line.event_id, line.event_index, line.start, line.end, line.text,
                          line.score + KIND_BOOST)
    return out


def extract_lines(
    query: str,
    events: Sequence[Event | Passage],
    max_tokens: int,
    count_tokens: Callable[[str], int],
    max_lines: int = 8,
    intent: QueryIntent | None = None,
) -> Extract:
    """The best lines (within the relative threshold) that fit ``max_tokens``, in source order."""
    scored = score_lines(query, events, intent)
    if not scored:
        return Extract((), 0)
    best = max(line.score for line in scored)
    ranked = sorted(
        (ln for ln in scored if ln.score >= best * RELATIVE_THRESHOLD),
        key=lambda ln: (-ln.score, ln.event_index, ln.start),
    )
    chosen: list[Line] = []
    seen: set[tuple[str, int]] = set()
    used = 0
    for line in ranked:
        cost = count_tokens(line.text)
        if len(chosen) >= max_lines or (line.event_id, line.start) in seen:
            continue
        if used + cost > max_tokens:
            continue
        chosen.append(line)
        seen.add((line.event_id, line.start))
        used += cost
    chosen.sort(key=lambda ln: (ln.event_index, ln.start))
    return Extract(tuple(chosen), used, best)


def quoted_lines(quotes: Sequence[str], events: Sequence[Event], score: float = 1.0) -> list[Line]:
    """Lines of ``events`` holding an LLM's quotes verbatim; a quote found nowhere is dropped.

    The returned text is always the stored line, never the model's string.
    """
    out: list[Line] = []
    for quote in (q.strip() for q in quotes):
        if not quote:
            continue
        for passage in passages_from_events(events):
            hit = next(((s, e, t) for s, e, t in split_lines(passage) if quote in t), None)
            if hit is not None:
                out.append(Line(passage.event_id, passage.event_index, *hit, score))
                break
    return out

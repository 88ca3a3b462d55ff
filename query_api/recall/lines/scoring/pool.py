"""Lines by meaning's scorer (:func:`line_pool`, :func:`score_semantic`; what it adds up:
the package's docstring)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from breadcrumb.processors.test_runs import counts
from breadcrumb.processors.text_cache import text_cache
from breadcrumb.query_api.recall.lines.edits import DIFF, EDIT_MARKERS, is_edit
from breadcrumb.query_api.recall.lines.scoring.weights import (
    SEMANTIC,
    LineWeights,
    holds_kind_cached,
    line_shape,
    line_terms,
    pool_weights,
)
from breadcrumb.query_api.recall.lines.shapes import (
    IMPORT_MARKER,
    MAX_LINE_CHARS,
    command_line,
    failure_line,
)
from breadcrumb.query_api.recall.lines.speakers import named_speakers, speaker
from breadcrumb.query_api.recall.passages import Found, Line, Passage, split_lines
from breadcrumb.query_api.recall.question import Query, QueryIntent

_WORDY = re.compile(r"\w")  # a line of punctuation alone (``.``, ``>``, ``});``) answers nothing


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate line with its fused score and the memory (range) it belongs to."""

    line: Line
    memory_id: str
    terms: frozenset[str]


class LinePool:
    """The candidate lines of a pool as columns, and their fused scores.

    ``raw``: the fused score before neighbours and damping (a :class:`Line`'s ``score``);
    ``final``: the ranking score; ``order``: line positions best first (ties: event
    index, then start offset, then pool order).
    """

    __slots__ = ("found", "line", "raw", "final", "order")

    def __init__(self, found: list[Found], line: list[_Line],
                 raw: list[float], final: list[float], order: list[int]) -> None:
        self.found, self.line, self.raw, self.final, self.order = found, line, raw, final, order

    def scored(self, i: int) -> Scored:
        f, (start, end, text, terms, _shape) = self.found[i], self.line[i]
        p = f.passage
        return Scored(Line(p.event_id, p.event_index, start, end, text, round(self.raw[i], 6)),
                      f.memory_id, terms)


def line_pool(found: Iterable[Found], terms: dict[str, float], intent: QueryIntent,
              range_score: dict[str, float], roles: dict[str, str] | None = None,
              dated: frozenset[str] = frozenset(), question: str = "",
              w: LineWeights = SEMANTIC, words: Mapping[tuple[str, int], float] | None = None
              ) -> LinePool:
    """Every distinct line of the candidate passages, scored (see :func:`score_semantic`).
    ``words``: (event id, start) -> a word-exact score's share of the best (0..1)."""
    groups = _groups(list(found), intent.temporal == "oldest")
    rows = [(f, line) for f, _dense, lines in groups for line in lines]
    lines = [line for _f, line in rows]
    weights = pool_weights(terms, [ln[3] for ln in lines])
    raw = _fused(groups, weights, intent, range_score, roles or {}, dated, w)
    if words:
        raw = [sc + w.words * words.get((f.passage.event_id, ln[0]), 0.0)
               for sc, (f, ln) in zip(raw, rows, strict=True)]
    lifted = _with_neighbors(raw, groups, w.neighbor_share) if w.neighbor_share > 0 else raw
    # 40 different lines of one shape: one of them is enough; one line repeated verbatim
    # (an output the next turn quotes again) is one line, and packing keeps one copy
    counts = Counter(shape for shape, _text in {(ln[4], ln[2]) for ln in lines})
    named = named_speakers(question, (ln[2] for ln in lines)) if question else frozenset()
    final = [sc / (1.0 + max(0, counts[ln[4]] - 3))
             + (w.speaker if named and speaker(ln[2]) in named else 0.0)
             for sc, ln in zip(lifted, lines, strict=True)]
    keys = [(-sc, f.passage.event_index, ln[0]) for sc, (f, ln) in zip(final, rows, strict=True)]
    order = sorted(range(len(final)), key=keys.__getitem__)
    return LinePool([f for f, _ln in rows], lines, raw, final, order)


_Line = tuple[int, int, str, frozenset[str], str]  # start, end, text, terms, shape


_Group = tuple[Found, float, list[_Line]]  # a passage, its normalised dense score, its lines


def _groups(found: list[Found], keep_removed: bool) -> list[_Group]:
    """Each passage with its lines not seen in an earlier passage (same event, same
    start), and its dense similarity min-max normalised over the pool."""
    cosines = [f.dense for f in found if f.dense is not None]
    hi, lo = (max(cosines), min(cosines)) if cosines else (1.0, 0.0)
    seen: set[tuple[str, int]] = set()
    out = []
    for f in found:
        eid = f.passage.event_id
        fresh = []
        for line in _lines(f.passage.text, f.passage.offset, keep_removed):
            if (eid, line[0]) not in seen:
                seen.add((eid, line[0]))
                fresh.append(line)
        dense = 0.0 if f.dense is None else (1.0 if hi <= lo else (f.dense - lo) / (hi - lo))
        out.append((f, dense, fresh))
    return out


def _fused(groups: list[_Group], weights: dict[str, float],
           intent: QueryIntent, range_score: dict[str, float], roles: dict[str, str],
           dated: frozenset[str], w: LineWeights) -> list[float]:
    """Each line's fused score before neighbours and damping."""
    total = sum(weights.values()) or 1.0
    keys = frozenset(weights)
    position = {t: i for i, t in enumerate(weights)}.__getitem__
    boosted = intent.failure or bool(intent.kinds) or intent.counted is not None
    out = []
    for f, normalised, lines in groups:
        dense = w.dense * normalised
        rng = w.range * range_score.get(f.memory_id, 0.0)
        role = bool(intent.role) and roles.get(f.passage.event_id) == intent.role
        mine = intent.first_person and roles.get(f.passage.event_id) == "user"
        date = f.passage.event_id in dated
        header = _edit_header(f.passage, lines, keys)
        for line in lines:
            common = line[3] & keys
            if common and header and line[0] != f.passage.offset:
                common = common | header  # a line of an edit is about the file it names
            if not common:
                lexical = 0.0
            elif len(common) == 1:
                lexical = weights[next(iter(common))] / total  # sum([w]) is w
            else:  # added up in ``weights`` order, as a sum over ``weights`` would
                lexical = sum([weights[t] for t in sorted(common, key=position)]) / total
            score = dense + w.lexical * lexical
            score += rng + (_boosts(line[2], intent, w) if boosted else 0.0)
            if role:
                score += w.role
            elif mine:
                score += w.mine
            if date:
                score += w.date
            out.append(score)
    return out


def _edit_header(passage: Passage, lines: list[_Line], keys: frozenset[str]) -> frozenset[str]:
    """The question terms an edit's header line (``Edit path``) holds, for its other lines."""
    if not is_edit(passage) or not lines or lines[0][0] != passage.offset \
            or passage.offset != 0:
        return frozenset()
    return lines[0][3] & keys


def score_semantic(found: Iterable[Found], terms: dict[str, float], intent: QueryIntent,
                range_score: dict[str, float], roles: dict[str, str] | None = None,
                dated: frozenset[str] = frozenset(), question: str = ""
                ) -> list[tuple[float, Scored]]:
    """Every line of the candidate passages with its fused score, best first.

    A question term's weight is scaled by its rarity among the candidate lines (a
    speaker's name on every line tells nothing), like an IDF over the pool. ``roles``
    (event id -> role) lifts the lines of the speaker the question asks about; ``dated``
    (event ids said within the period the question names) lifts those events' lines;
    ``question`` lifts the transcript lines of a speaker it names (:mod:`.speakers`).
    """
    pool = line_pool(found, terms, intent, range_score, roles, dated, question)
    return [(pool.final[i], pool.scored(i)) for i in pool.order]

@text_cache(16384, max_chars=4096)
def _lines(text: str, offset: int, keep_removed: bool) -> tuple[_Line, ...]:
    """(start, end, text, terms, shape) of a passage's lines, a diff's removed lines left
    out unless kept; pure, so cached (the lead and the packing score the same passages)."""
    diff = not keep_removed and DIFF.search(text) is not None
    return tuple((start, end, line, line_terms(line), line_shape(line))
                 for start, end, line in split_lines(Passage("", 0, offset, text))
                 if not (diff and _removed(line)) and line not in EDIT_MARKERS
                 and not IMPORT_MARKER.match(line) and _WORDY.search(line))


def _removed(line: str) -> bool:
    return line.startswith("-") and not line.startswith("---")


def _with_neighbors(scores: list[float], groups: list[_Group], share: float) -> list[float]:
    """Each line lifted by ``share`` of its lead over it of the best line of an
    adjacent event of the same range: ``max(score, score + share * (near - score))``."""
    spans = []
    best: dict[tuple[str, int], float] = {}
    end = 0
    for f, _dense, lines in groups:
        key, start, end = (f.memory_id, f.passage.event_index), end, end + len(lines)
        if lines:
            best[key] = max(best.get(key, 0.0), max(scores[start:end]))
        spans.append((key, start, end))
    lifted: list[float] = []
    for (mid, idx), start, end in spans:
        near = max(best.get((mid, idx - 1), 0.0), best.get((mid, idx + 1), 0.0))
        # near <= score: the lifted value is never above the score, which max() keeps
        lifted += [sc if near <= sc else sc + share * (near - sc)
                   for sc in scores[start:end]]
    return lifted

def _boosts(text: str, intent: QueryIntent, w: LineWeights) -> float:
    boost = 0.0
    if intent.counted and counts(intent.counted).search(text[:MAX_LINE_CHARS]):
        boost += w.kind
    if intent.failure and failure_line(text):
        boost += w.failure
    if intent.kinds and (holds_kind_cached(text[:MAX_LINE_CHARS], intent.kinds)
                         or command_line(text, intent)):
        boost += w.kind
    return boost


def passage_lead(found: dict[str, Found], query: Query) -> dict[str, float]:
    """Memory id -> its best line's fused score as a share of the best line's (0..1)."""
    pool = line_pool(found.values(), query.terms, query.intent, {})
    best: dict[str, float] = {}
    for i in pool.order:  # best first: the memories in the order of their best line
        mid = pool.found[i].memory_id
        best[mid] = max(best.get(mid, 0.0), pool.final[i])
    top = max(best.values(), default=0.0)
    return {mid: v / top for mid, v in best.items()} if top > 0 else {}


"""Semantic Extract's line scoring and packing (used by :mod:`query_api.semantic`).

Each line of a candidate passage is scored by fusing the passage's dense similarity
(min-max over the pool), the line's lexical coverage of the weighted question terms
(each term weighted by its rarity among the pool's lines), boosts for the value kinds
/ failures the question asks for, and the score of the range (memory) it comes from;
a turn next to a strong one takes a share of its lead, and lines of one repeated shape
are damped. :func:`pack` fills the token budget greedily, preferring lines that cover
question terms not covered yet over near-repeats of lines already chosen.

A recall scores two pools (the passage search's, for the memory ranking, and the
followed ranges' plus it, for the evidence), each of a few hundred lines, so the
scoring works on plain per-line columns (:class:`LinePool`) and builds a
:class:`~processors.extract.Line` only for a line that is returned.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial

from breadcrumb.processors.decide import QueryIntent
from breadcrumb.processors.extract import Line, Passage, split_lines
from breadcrumb.processors.hints import holds_kind as text_holds_kind
from breadcrumb.processors.lexical import EN_STOPWORDS, lexical_terms
from breadcrumb.query_api.scoring import Query
from breadcrumb.query_api.speakers import named_speakers, speaker

W_DENSE = 1.0
W_LEXICAL = 1.2
W_RANGE = 0.35
KIND_BOOST = 0.5  # a line holding a value of a kind the question asks for
FAILURE_BOOST = 0.5
ROLE_BOOST = 1.0  # a line of the speaker the question asks about ("what the user said")
DATE_BOOST = 0.8  # a line said within the period the question names ("in August 2023")
SPEAKER_BOOST = 0.2  # a transcript line spoken by a person the question names
KEEP_RATIO = 0.0  # share of the best fused score a line needs to be packed (0: fill the budget)
COVER_BONUS = 0.25  # per share of question weight a line covers that nothing chosen does
REPEAT_PENALTY = 0.3  # times the term overlap with the most similar chosen line
MAX_LINES = 40
POOL_IDF = True
NEIGHBOR_SHARE = 0.5  # share of an adjacent turn's lead a line takes (question -> answer)
MAX_LINE_CHARS = 4000
FAILURE = re.compile(r"(FAIL|ERROR|Error|Exception|Traceback|assert|panic|失敗|エラー)")
_SHAPE_NOISE = re.compile(r"[\d\s]+")
# pure per-line work, cached: the lead and the packing both score a pool, lines recur
_shape = lru_cache(maxsize=32768)(partial(_SHAPE_NOISE.sub, ""))
_holds_kind = lru_cache(maxsize=32768)(text_holds_kind)
_DIFF = re.compile(r"^(@@ -\d|--- a/|\+\+\+ b/)", re.M)


@dataclass(frozen=True, slots=True)
class Found:
    """A candidate passage with the scores its searches gave it."""

    passage: Passage
    memory_id: str
    dense: float | None = None  # cosine to the question
    sparse: float | None = None  # lexical channel score


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
              dated: frozenset[str] = frozenset(), question: str = "") -> LinePool:
    """Every distinct line of the candidate passages, scored (see :func:`score_lines`)."""
    groups = _groups(list(found), intent.temporal == "oldest")
    rows = [(f, line) for f, _dense, lines in groups for line in lines]
    lines = [line for _f, line in rows]
    weights = pool_weights(terms, [ln[3] for ln in lines])
    raw = _fused(groups, weights, intent, range_score, roles or {}, dated)
    lifted = _with_neighbors(raw, groups) if NEIGHBOR_SHARE > 0 else raw
    counts = Counter(ln[4] for ln in lines)  # 40 lines of one shape: one of them is enough
    named = named_speakers(question, (ln[2] for ln in lines)) if question else frozenset()
    final = [sc / (1.0 + max(0, counts[ln[4]] - 3))
             + (SPEAKER_BOOST if named and speaker(ln[2]) in named else 0.0)
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
           dated: frozenset[str]) -> list[float]:
    """Each line's fused score before neighbours and damping."""
    total = sum(weights.values()) or 1.0
    keys = frozenset(weights)
    position = {t: i for i, t in enumerate(weights)}.__getitem__
    boosted = intent.failure or bool(intent.kinds)
    out = []
    for f, normalised, lines in groups:
        dense = W_DENSE * normalised
        rng = W_RANGE * range_score.get(f.memory_id, 0.0)
        role = bool(intent.role) and roles.get(f.passage.event_id) == intent.role
        date = f.passage.event_id in dated
        for line in lines:
            common = line[3] & keys
            if not common:
                lexical = 0.0
            elif len(common) == 1:
                lexical = weights[next(iter(common))] / total  # sum([w]) is w
            else:  # added up in ``weights`` order, as a sum over ``weights`` would
                lexical = sum([weights[t] for t in sorted(common, key=position)]) / total
            score = dense + W_LEXICAL * lexical
            score += rng + (_boosts(line[2], intent) if boosted else 0.0)
            if role:
                score += ROLE_BOOST
            if date:
                score += DATE_BOOST
            out.append(score)
    return out


def score_lines(found: Iterable[Found], terms: dict[str, float], intent: QueryIntent,
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


@lru_cache(maxsize=32768)
def _line_terms(text: str) -> frozenset[str]:
    """A line's question-comparable terms (cached: the lead and the packing both score a
    pool, and the same lines recur across questions)."""
    return frozenset(t for t in lexical_terms(text[:MAX_LINE_CHARS]) if t not in EN_STOPWORDS)


@lru_cache(maxsize=16384)
def _lines(text: str, offset: int, keep_removed: bool) -> tuple[_Line, ...]:
    """(start, end, text, terms, shape) of a passage's lines, a diff's removed lines left
    out unless kept; pure, so cached (the lead and the packing score the same passages)."""
    diff = not keep_removed and _DIFF.search(text) is not None
    return tuple((start, end, line, _line_terms(line), _shape(line))
                 for start, end, line in split_lines(Passage("", 0, offset, text))
                 if not (diff and _removed(line)))


def _removed(line: str) -> bool:
    return line.startswith("-") and not line.startswith("---")


def _in_order(terms: dict[str, float]) -> Callable[[frozenset[str]], list[tuple[str, float]]]:
    """``line terms -> [(term, weight)]`` of the question terms a line holds, in the
    order of ``terms`` (sums over them then add up in the same order as over ``terms``)."""
    keys = frozenset(terms)
    position = {t: i for i, t in enumerate(terms)}

    def held(line_terms: frozenset[str]) -> list[tuple[str, float]]:
        common = line_terms & keys
        if len(common) > 1:
            return [(t, terms[t]) for t in sorted(common, key=position.__getitem__)]
        return [(t, terms[t]) for t in common]

    return held


def _with_neighbors(scores: list[float], groups: list[_Group]) -> list[float]:
    """Each line lifted by ``NEIGHBOR_SHARE`` of its lead over it of the best line of an
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
        lifted += [sc if near <= sc else sc + NEIGHBOR_SHARE * (near - sc)
                   for sc in scores[start:end]]
    return lifted


def pool_weights(terms: dict[str, float], lines: Sequence[frozenset[str]]) -> dict[str, float]:
    """Question term weights times their rarity among ``lines`` (1.0 when in one line)."""
    if not POOL_IDF or len(lines) < 2:
        return dict(terms)
    n = len(lines)
    norm = math.log(1.0 + n)
    keys = frozenset(terms)
    df = Counter([t for line in lines for t in line & keys])
    out = {}
    for term, weight in terms.items():
        count = df[term]
        out[term] = weight * (math.log(1.0 + n / count) / norm if count else 1.0)
    return out


def _boosts(text: str, intent: QueryIntent) -> float:
    boost = 0.0
    if intent.failure and FAILURE.search(text):
        boost += FAILURE_BOOST
    if intent.kinds and _holds_kind(text[:MAX_LINE_CHARS], intent.kinds):
        boost += KIND_BOOST
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


def pack(ranked: list[tuple[float, Scored]], terms: dict[str, float], budget: int,
         count: Callable[[str], int], max_lines: int = MAX_LINES) -> list[Scored]:
    """Lines within the budget, preferring new question terms over near-repeats.

    Greedy: each pick maximises ``score + COVER_BONUS * share of question weight not yet
    covered - REPEAT_PENALTY * overlap with the most similar chosen line``; the overlap
    of a candidate is brought up to date when it is looked at (lazy greedy).
    """
    if not ranked:
        return []
    best = ranked[0][0]
    pool = [(sc, s) for sc, s in ranked if sc >= best * KEEP_RATIO]
    picks = _picks([sc for sc, _s in pool], [s.line.text for _sc, s in pool],
                   [s.terms for _sc, s in pool], terms, budget, count, max_lines)
    return [pool[i][1] for i in picks]


def pack_pool(pool: LinePool, terms: dict[str, float], budget: int, count: Callable[[str], int],
              max_lines: int = MAX_LINES) -> list[Scored]:
    """:func:`pack` of ``score_lines``'s ranking of ``pool``, building only the chosen lines."""
    if not pool.order:
        return []
    best = pool.final[pool.order[0]]
    rows = [i for i in pool.order if pool.final[i] >= best * KEEP_RATIO]
    picks = _picks([pool.final[i] for i in rows], [pool.line[i][2] for i in rows],
                   [pool.line[i][3] for i in rows], terms, budget, count, max_lines)
    return [pool.scored(rows[i]) for i in picks]


def _picks(scores: list[float], texts: list[str], line_terms: list[frozenset[str]],
           terms: dict[str, float], budget: int, count: Callable[[str], int],
           max_lines: int) -> list[int]:
    """Positions :func:`pack` chooses, in pick order."""
    total = sum(terms.values()) or 1.0
    repeat = [0.0] * len(scores)
    costs = [max(1, count(text)) for text in texts]
    # the question terms each line holds, in ``terms`` order (same sums as over ``terms``)
    held = _in_order(terms)
    asked = [held(t) for t in line_terms]
    covered: set[str] = set()
    chosen: list[frozenset[str]] = []  # the terms of the chosen lines (none empty)
    folded = [0] * len(scores)  # chosen lines already folded into repeat[i]

    def key(i: int) -> float:
        mine = line_terms[i]
        if mine and folded[i] < len(chosen):  # _overlap with each line chosen since
            r, size = repeat[i], len(mine)
            for c in chosen[folded[i]:]:
                if not mine.isdisjoint(c):  # disjoint: overlap 0, repeat[i] stays
                    common = len(mine & c)
                    r = max(r, common / (size + len(c) - common))
            repeat[i] = r
        folded[i] = len(chosen)
        return (scores[i] - REPEAT_PENALTY * repeat[i]
                + COVER_BONUS * sum([w for t, w in asked[i] if t not in covered]) / total)

    # Lazy greedy, same picks as a full max() over the pool each time (ties: lowest
    # index): a line's key only falls (repeat grows, coverage shrinks), so a stale key
    # is a bound; a popped line whose fresh key still heads the heap is the best.
    heap = [(-key(i), i) for i in range(len(scores)) if costs[i] <= budget]
    heapq.heapify(heap)
    used = 0
    picks: list[int] = []
    while heap and len(picks) < max_lines:
        _stale, i = heapq.heappop(heap)
        if used + costs[i] > budget:  # ``used`` only grows: it never fits again
            continue
        fresh = (-key(i), i)
        if heap and fresh > heap[0]:
            heapq.heappush(heap, fresh)
            continue
        picks.append(i)
        if line_terms[i]:  # an empty set overlaps nothing
            chosen.append(line_terms[i])
        covered |= line_terms[i] & terms.keys()
        used += costs[i]
    return picks


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    common = len(a & b)  # |a ∪ b| = |a| + |b| - |a ∩ b|: one set built, not two
    return common / (len(a) + len(b) - common)

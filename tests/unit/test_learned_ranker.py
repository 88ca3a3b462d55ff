"""The learned line ranker's parts: features, the model file, packing, training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from breadcrumb.eval import ranker as training
from breadcrumb.query_api.recall.extract.learned import pack
from breadcrumb.query_api.recall.extract.learned.features import (
    INDEX,
    NAMES,
    Candidate,
    feature_rows,
)
from breadcrumb.query_api.recall.extract.learned.model import ModelError, load, shipped
from breadcrumb.query_api.recall.question import Query, analyze_query


def _query(text: str) -> Query:
    from breadcrumb.processors.lexical import query_terms

    return Query(text, analyze_query(text), query_terms(text), [0.0])


def _line(text: str, n: int = 0, kind: str = "tool_result", dense: float | None = 0.8,
          header: str = "") -> Candidate:
    return Candidate("m1", "e1", 3, n * 100, n * 100 + len(text), text, kind, "tool", 0, 1.0,
                     True, n, dense, False, header)


def test_a_line_holding_the_question_terms_and_the_asked_kind_reads_so() -> None:
    query = _query("which port does the redis container listen on")
    pool = [_line("REDIS_PORT=6380", 0), _line("The build finished without warnings.", 1)]
    rows = feature_rows(query, pool, {"redis": 1.0, "port": 1.0, "container": 1.0,
                                      "listen": 1.0})
    assert rows[0][INDEX["lex_cov"]] > rows[1][INDEX["lex_cov"]] == 0.0
    assert rows[0][INDEX["is_assignment"]] == 1.0
    assert rows[1][INDEX["lex_zero"]] == 1.0
    assert all(len(r) == len(NAMES) for r in rows)


def test_a_diff_line_reads_the_terms_of_its_file_header() -> None:
    query = _query("which migrations file added the orders table")
    header = "+++ b/migrations/2024_orders.sql"
    pool = [_line("+CREATE TABLE orders_archive (id int);", 1, "file_edit", header=header)]
    row = feature_rows(query, pool, {"migrations": 1.0, "file": 1.0, "orders": 1.0,
                                     "table": 1.0, "added": 1.0})[0]
    assert row[INDEX["lex_ctx"]] > row[INDEX["lex_cov"]]
    assert row[INDEX["is_added"]] == 1.0


def _model(path: Path, **change: object) -> Path:
    data = {"features": ["lex_cov", "dense"], "mean": [0.0, 0.0], "scale": [1.0, 1.0],
            "weights": [2.0, 1.0]}
    data.update(change)
    path.write_text(json.dumps(data))
    return path


def test_the_model_scores_by_its_named_features_and_calibrates(tmp_path: Path) -> None:
    ranker = load(_model(tmp_path / "m.json"))
    query = _query("redis port")
    pool = [_line("REDIS_PORT=6380", 0, dense=0.5), _line("nothing here", 1, dense=0.9)]
    rows = feature_rows(query, pool, {"redis": 1.0, "port": 1.0})
    scores = ranker.scores(rows)
    assert scores[0] > scores[1]


def test_a_model_naming_a_feature_this_code_lacks_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="does not compute"):
        load(_model(tmp_path / "m.json", features=["lex_cov", "clairvoyance"]))
    with pytest.raises(ModelError, match="cannot read"):
        load(tmp_path / "absent.json")


def test_the_shipped_model_loads() -> None:
    ranker = shipped()
    assert ranker is not None
    assert ranker.meta["trained_on"]["questions"] > 0


def test_packing_keeps_the_best_lines_once_within_the_budget() -> None:
    lines = [_line("alpha beta", 0), _line("alpha beta", 1), _line("gamma " * 50, 2),
             _line("delta", 3)]
    chosen = pack(lines, [4.0, 3.0, 2.0, 1.0], budget=20, count=lambda t: len(t.split()))
    assert [c.text for c, _s in chosen] == ["alpha beta", "delta"]


def test_training_puts_the_answering_line_first() -> None:
    def row(label: int, cov: float) -> dict[str, object]:
        f = [0.0] * len(NAMES)
        f[INDEX["lex_cov"]] = cov
        return {"text": f"l{cov}", "tokens": 2, "label": label, "f": f}

    rows = [{"id": str(i), "set": "dev", "value": "l0.9", "budget": 4,
             "lines": [row(1, 0.9), row(0, 0.1 * (i % 3)), row(0, 0.05)]} for i in range(6)]
    model = training.fit(rows, steps=200, features=("lex_cov",))
    assert model["weights"][0] > 0
    assert training.simulate(model, rows) == {"questions": 6, "hits": 6, "top3": 6}


def test_a_held_out_set_is_never_dumped_for_training(tmp_path: Path) -> None:
    held = tmp_path / "real_questions_heldout9.jsonl"
    held.write_text("")
    with pytest.raises(ValueError, match="held-out"):
        training.dump(tmp_path, [held], tmp_path / "rows.jsonl.gz", "u")


def test_a_key_reassigned_by_a_later_edit_keeps_only_its_newest_value() -> None:
    from breadcrumb.query_api.recall.extract.learned.current import replaced

    def edit(text: str, index: int, memory: str = "m1") -> Candidate:
        return Candidate(memory, f"e{index}", index, 0, len(text), text, "file_edit", "tool",
                         0, 1.0, True, 1, None, False)

    lines = [edit("+LOGIN_RETRIES = 14", 2), edit("-LOGIN_RETRIES = 14", 7),
             edit("+LOGIN_RETRIES = 21", 7), edit("+OTHER_KEY = 3", 2),
             edit("if retries == 14:", 8), edit("+LOGIN_RETRIES = 9", 1, "m2")]
    old = replaced(lines, {"m1": "t1", "m2": "t2"})
    assert old == {0: "14", 1: "14"}  # another thread's value is its own


def test_a_packed_line_of_an_edit_brings_the_header_naming_its_file() -> None:
    header = "+++ b/migrations/20261102_orders.sql"
    lines = [_line("+ALTER TABLE orders ADD COLUMN status TEXT;", 2, "file_edit",
                   header=header),
             _line("unrelated prose line", 5), _line(header, 1, "file_edit")]
    chosen = pack(lines, [3.0, 2.0, 0.1], budget=200, count=lambda t: len(t.split()))
    assert [c.text for c, _s in chosen][:2] == [lines[0].text, header]


def test_the_raw_chunk_lane_packs_the_first_raw_chunk_after_the_best_lines() -> None:
    from dataclasses import replace

    best = [_line(f"scored line {n}", n) for n in range(4)]
    raw = [replace(_line(f"raw line {n}", 10 + n), raw_rank=0) for n in range(2)]
    lines, scores = [*best, *raw], [5.0, 4.0, 3.0, 2.0, 0.2, 0.1]
    count = lambda t: len(t.split())  # noqa: E731
    plain = pack(lines, scores, budget=16, count=count)
    assert [c.text for c, _s in plain] == [c.text for c in best]  # 4 tokens each
    laned = pack(lines, scores, budget=16, count=count, lane_share=0.5, lane_chunks=1)
    # half the budget to the best lines (2 of 4 tokens each), then the raw chunk's lines
    assert [c.text for c, _s in laned] == [*(c.text for c in best[:2]), raw[0].text,
                                           raw[1].text]
    # the same simulated over dumped rows (eval.ranker.packed)
    f = [0.0] * len(NAMES)
    rows = [{"text": c.text, "tokens": count(c.text), "index": c.event_index,
             "start": c.start, "f": [*f[:INDEX["raw_rank_inv"]], 1.0 / (1 + c.raw_rank),
                                     *f[INDEX["raw_rank_inv"] + 1:]]} for c in lines]
    q = {"lines": rows, "budget": 16}
    assert [r["text"] for r in training.packed(q, scores)] == [c.text for c in best]
    assert [r["text"] for r in training.packed(q, scores, lane_share=0.5)] == \
        [c.text for c, _s in laned]


def test_session_folds_keep_each_session_in_one_fold() -> None:
    rows = [{"id": f"q{i}", "set": f"set{i % 3}", "session": f"repo{i % 5}:s.jsonl"}
            for i in range(30)]
    folded = training.session_folds(rows, 2)
    by_session: dict[str, set[str]] = {}
    for q in folded:
        by_session.setdefault(q["session"], set()).add(q["set"])
    assert all(len(folds) == 1 for folds in by_session.values())  # a session never splits
    assert {f for folds in by_session.values() for f in folds} == {"sessions0", "sessions1"}
    assert [q["id"] for q in folded] == [q["id"] for q in rows] and rows[0]["set"] == "set0"

"""The real-session question sets shipped in eval/agents: each loads, and the held-out
sets ask for no value another set asks for (a held-out set measures only if it is new)."""

from __future__ import annotations

from pathlib import Path

import pytest

from breadcrumb.eval.realsessions import DEFAULT_QUESTIONS, load_questions

SETS = sorted(DEFAULT_QUESTIONS.parent.glob("real_questions*.jsonl"))


def test_the_tuned_set_and_ten_held_out_sets_are_shipped() -> None:
    assert [p.name for p in SETS] == ["real_questions.jsonl", "real_questions_heldout.jsonl",
                                      "real_questions_heldout10.jsonl",
                                      "real_questions_heldout2.jsonl",
                                      "real_questions_heldout3.jsonl",
                                      "real_questions_heldout4.jsonl",
                                      "real_questions_heldout5.jsonl",
                                      "real_questions_heldout6.jsonl",
                                      "real_questions_heldout7.jsonl",
                                      "real_questions_heldout8.jsonl",
                                      "real_questions_heldout9.jsonl"]


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.name)
def test_each_set_covers_six_agents_or_more_with_named_sources(path: Path) -> None:
    questions = load_questions(path)
    # sets 1-8: eight agents each; sets 9 and 10: six (no new public Cursor, Gemini CLI,
    # OpenAI-chat or Copilot session of a usable size turned up)
    six = path.name.endswith(("heldout9.jsonl", "heldout10.jsonl"))
    assert len({q.agent for q in questions}) >= (6 if six else 8)
    assert all({"repo", "commit", "path"} <= set(q.source) for q in questions)


def test_no_value_or_id_is_asked_by_two_sets() -> None:
    values: dict[str, str] = {}
    ids: set[str] = set()
    for path in SETS:
        for q in load_questions(path):
            assert q.qid not in ids, q.qid
            ids.add(q.qid)
            for other, where in values.items():
                assert q.value not in other and other not in q.value, (q.qid, where)
            values[q.value] = q.qid

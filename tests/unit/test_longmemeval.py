"""LongMemEval in ``breadcrumb eval``: the mapping to events and the metrics, on hand-made
cases and on the LongMemEval-format slice of ``tests/fixtures/longmemeval``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from breadcrumb.eval import longmemeval as lme
from breadcrumb.eval.methods import Answer
from breadcrumb.eval.metrics import Item, Span

SLICE = Path(__file__).resolve().parents[1] / "fixtures" / "longmemeval"


def record(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "question_id": "q1", "question_type": "knowledge-update", "question": "How many?",
        "question_date": "2023/08/01 (Tue) 09:00", "answer": "six",
        "answer_session_ids": ["a1", "a2"],
        "haystack_session_ids": ["a2", "f", "a1"],
        "haystack_dates": ["2023/07/15 (Sat) 11:00", "2023/06/20 (Tue) 20:00",
                           "2023/06/02 (Fri) 17:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "now six", "has_answer": True},
             {"role": "assistant", "content": "ok"}],
            [{"role": "user", "content": "soup?"}, {"role": "assistant", "content": "yes"}],
            [{"role": "user", "content": "three", "has_answer": True}],
        ],
    }
    return {**base, **over}


def answer(*event_ids: str, tokens: int = 10, classification: str | None = None) -> Answer:
    items = [Item(Span("lme-q1", eid.split("-")[2], 0, 0), "line", (eid,)) for eid in event_ids]
    return Answer("m", items, items, "\n".join("line" for _ in items), tokens, 1.0,
                  classification)


def test_a_record_becomes_dated_threads_with_a_session_end_each() -> None:
    q = lme.question_from(record())
    assert q.user_id == "lme-q1"
    threads = [e["thread_id"] for e in q.events]
    assert threads == ["a2", "a2", "a2", "f", "f", "f", "a1", "a1"]
    assert [e["kind"] for e in q.events if e["thread_id"] == "a2"] == \
        ["message", "message", "session_end"]
    assert [e["index"] for e in q.events if e["thread_id"] == "f"] == [0, 1, 2]
    assert q.events[0]["ts"] == "2023-07-15T11:00:00Z"
    assert q.events[1]["ts"] == "2023-07-15T11:00:30Z"
    assert {e["user_id"] for e in q.events} == {"lme-q1"}
    assert q.answer_turns == {"lme-q1-a2-000", "lme-q1-a1-000"}


def test_the_current_value_is_the_latest_dated_answer_session_not_the_last_listed() -> None:
    q = lme.question_from(record())
    assert q.current_turns == {"lme-q1-a2-000"}  # 07/15 beats 06/02 though listed first


def test_a_repeated_session_id_gets_its_own_thread() -> None:
    rec = record(haystack_session_ids=["a2", "a2", "a1"])
    threads = {e["thread_id"] for e in lme.question_from(rec).events}
    assert threads == {"a2", "a2#2", "a1"}


def test_turn_recall_needs_an_answer_turn_among_the_lines() -> None:
    q = lme.question_from(record())
    assert lme.score(q, answer("lme-q1-a1-000"))["turn_recall"] is True
    assert lme.score(q, answer("lme-q1-a1-000"))["current_value"] is False
    assert lme.score(q, answer("lme-q1-a2-001"))["turn_recall"] is False  # right session
    assert lme.score(q, answer())["turn_recall"] is False


def test_an_answer_turn_inside_a_returned_range_is_a_memory_hit_even_unquoted() -> None:
    q = lme.question_from(record())
    rng = Item(Span("lme-q1", "a2", 0, 1), "summary", ())
    quoted = Item(Span("lme-q1", "f", 0, 0), "line", ("lme-q1-f-000",))
    row = lme.score(q, Answer("m", [rng], [quoted], "line", 5, 1.0))
    assert row["memory_turn_hit"] is True and row["turn_recall"] is False
    other = Item(Span("lme-q1", "a2", 1, 2), "summary", ())
    assert lme.score(q, Answer("m", [other], [quoted], "", 5, 1.0))["memory_turn_hit"] is False


def test_session_recall_all_needs_every_answer_session() -> None:
    q = lme.question_from(record())
    one = lme.score(q, answer("lme-q1-a2-001", "lme-q1-f-000"))
    assert one["session_recall_all"] is False and one["session_recall_any"] is True
    both = lme.score(q, answer("lme-q1-a2-001", "lme-q1-a1-000", tokens=700))
    assert both["session_recall_all"] is True and both["current_value"] is False
    assert both["tokens"] == 700 and both["sessions"] == 2


def test_abstentions_have_no_recall_figures_but_keep_what_decide_said() -> None:
    q = lme.question_from(record(question_id="q1_abs"))
    row = lme.score(q, answer("lme-q1-a1-000", classification="ambiguous"))
    assert q.group == lme.ABSTENTION
    assert row["turn_recall"] is None and row["session_recall_all"] is None
    assert row["classification"] == "ambiguous"


def test_summaries_keep_abstentions_apart_and_rate_per_type() -> None:
    rows = [{"group": "knowledge-update", "methods": {"m": {
                "turn_recall": True, "session_recall_all": False, "session_recall_any": True,
                "current_value": True, "tokens": 700, "latency_ms": 5.0}}},
            {"group": "multi-session", "methods": {"m": {
                "turn_recall": False, "session_recall_all": False, "session_recall_any": False,
                "current_value": None, "tokens": 300, "latency_ms": 7.0}}},
            {"group": lme.ABSTENTION, "methods": {"m": {
                "turn_recall": None, "session_recall_all": None, "session_recall_any": None,
                "current_value": None, "tokens": 800, "latency_ms": 9.0,
                "classification": "summary_ok"}}}]
    s = lme.summarize(rows, "m")
    assert s["all"]["questions"] == 2 and s["all"]["turn_recall"] == 0.5
    assert s["all"]["tokens_mean"] == 500 and s["all"]["tokens_max"] == 700
    assert s["all"]["current_value"] == 1.0
    assert s["multi-session"]["turn_recall"] == 0.0
    assert s[lme.ABSTENTION]["questions"] == 1
    assert s[lme.ABSTENTION]["classifications"] == {"summary_ok": 1}


def test_the_slice_loads_interleaved_over_types_and_caps() -> None:
    qs = lme.load(SLICE)
    assert [q.group for q in qs] == ["single-session-user", "multi-session",
                                     "knowledge-update", lme.ABSTENTION]
    assert len(lme.load(SLICE, limit=2)) == 2
    assert len(lme.load(SLICE, per_type=1)) == 4
    ku = next(q for q in qs if q.group == "knowledge-update")
    assert ku.current_turns == {"lme-lme_ku_1-answer_ku_2-000"}


def test_a_directory_without_records_or_with_a_bad_one_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no LongMemEval records"):
        lme.load(tmp_path)
    (tmp_path / "x.json").write_text('{"question_id": "x"}', "utf-8")
    with pytest.raises(ValueError, match="x.json: not a LongMemEval record"):
        lme.load(tmp_path)
    with pytest.raises(ValueError, match="not found"):
        lme.load(tmp_path / "missing")


def test_a_question_is_bounded_by_the_end_of_its_day_and_anchored_at_its_time() -> None:
    q = lme.question_from(record())
    as_of, now = lme.asked_at(q)
    assert now.isoformat() == "2023-08-01T09:00:00+00:00"
    assert as_of.isoformat() == "2023-08-01T23:59:59+00:00"


def test_a_history_session_later_on_the_question_day_is_told_apart() -> None:
    before = lme.question_from(record())
    assert lme.same_as_minute_bound(before)
    later = lme.question_from(record(haystack_dates=[
        "2023/08/01 (Tue) 21:40", "2023/06/20 (Tue) 20:00", "2023/06/02 (Fri) 17:00"]))
    assert not lme.same_as_minute_bound(later)  # LongMemEval has such records (gpt4_2f56ae70)
    as_of, _ = lme.asked_at(later)
    assert max(e["ts"] for e in later.events) <= as_of.strftime("%Y-%m-%dT%H:%M:%SZ")

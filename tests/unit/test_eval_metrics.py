"""Metric functions of ``breadcrumb eval`` on hand-made cases."""

from __future__ import annotations

import pytest

from breadcrumb.eval.methods import fuse, pack
from breadcrumb.eval.metrics import (
    Item,
    Span,
    evidence_recall,
    exact_value_hit,
    hit_at_k,
    mean,
    percentile,
    rate,
    stale_value_shown,
    wrong_top1,
)
from breadcrumb.eval.runner import check_thresholds
from breadcrumb.stores.ports import Hit


def item(user: str, thread: str, start: int, end: int, text: str = "") -> Item:
    return Item(Span(user, thread, start, end), text)


def test_span_overlap_needs_same_tenant_and_thread() -> None:
    a = Span("u1", "t", 3, 7)
    assert a.overlaps(Span("u1", "t", 7, 9))
    assert not a.overlaps(Span("u1", "t", 8, 9))
    assert not a.overlaps(Span("u2", "t", 3, 7))
    assert not a.overlaps(Span("u1", "other", 3, 7))


def test_hit_at_k_counts_only_the_first_k_items() -> None:
    target = [Span("u1", "db", 4, 4)]
    items = [item("u1", "auth", 0, 8), item("u1", "db", 0, 10)]
    assert not hit_at_k(items, target, 1)
    assert hit_at_k(items, target, 2)
    assert not hit_at_k([], target, 5)
    assert not hit_at_k(items, [], 5)


def test_wrong_top1_tenant_thread_and_distractor() -> None:
    expected = [Span("u1", "v2", 3, 3)]
    stale = [Span("u1", "v1", 3, 3)]
    assert not wrong_top1([item("u1", "v2", 0, 7)], "u1", expected, stale)  # the right one
    assert wrong_top1([item("u2", "v2", 0, 7)], "u1", expected, stale)  # other tenant
    assert wrong_top1([item("u1", "v1", 0, 8)], "u1", expected, stale)  # superseded value
    assert wrong_top1([item("u1", "cron", 0, 8)], "u1", expected, [])  # unrelated thread
    # same thread, another range, no distractor labelled there: a miss, not misleading
    assert not wrong_top1([item("u1", "v2", 8, 12)], "u1", expected, stale)
    assert not wrong_top1([], "u1", expected, stale)


def test_exact_value_is_verbatim() -> None:
    regex = r"/^[^@\s]+@[^@\s]+\.[^@\s]{2,}$/i"
    assert exact_value_hit(f"+export const EMAIL_RE = {regex};", regex)
    assert not exact_value_hit(r"/^[^@\s]+@[^@\s]+\.[^@\s]{2,}$/", regex)  # flag lost
    assert not exact_value_hit("anything", "")


def test_stale_value_shown_only_without_the_current_one() -> None:
    assert stale_value_shown("DB_PORT=5432", "DB_PORT=6432", ["DB_PORT=5432"])
    assert not stale_value_shown("-DB_PORT=5432\n+DB_PORT=6432", "DB_PORT=6432",
                                 ["DB_PORT=5432"])
    assert not stale_value_shown("nothing", "DB_PORT=6432", ["DB_PORT=5432"])


def test_evidence_recall_shares() -> None:
    text = "Caroline: I went to a support group.\nMelanie: Nice!"
    assert evidence_recall(text, ["Caroline: I went to a support group.", "Mel: no"]) == 0.5
    assert evidence_recall(text, []) == 0.0


def test_rate_mean_and_percentile() -> None:
    assert rate([True, False, None, True]) == pytest.approx(2 / 3)
    assert rate([None]) is None
    assert mean([1.0, None, 3.0]) == 2.0
    assert percentile([10.0, 20.0, 30.0, 40.0], 50) == 25.0
    assert percentile([10.0, 20.0, 30.0, 40.0], 95) == pytest.approx(38.5)
    assert percentile([5.0], 95) == 5.0
    assert percentile([], 50) is None
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_fuse_ranks_like_the_rerank_and_pack_respects_the_budget() -> None:
    def hit(cid: str, score: float, index: int, text: str) -> Hit:
        return Hit(cid, score, {"user_id": "u1", "thread_id": "t", "event_index": index,
                                "event_id": f"e{index}", "text": text})

    dense = [hit("a", 0.9, 1, "aaaa"), hit("b", 0.5, 2, "bb")]
    sparse = [hit("b", 4.0, 2, "bb"), hit("c", 2.0, 3, "c")]
    ranked = fuse(dense, sparse, 1.0, 0.6)
    assert [i.event_ids[0] for i in ranked] == ["e1", "e2", "e3"]  # 1.0, 0.6, 0.3
    assert ranked[1].score_parts == {"vector": 0.0, "keyword": 0.6}
    chosen, used = pack(ranked, 5, len)
    assert [i.text for i in chosen] == ["aaaa", "c"]  # "bb" would pass the budget
    assert used == 5


def test_thresholds_pass_fail_and_missing() -> None:
    results = {"golden": {"summary": {"breadcrumb": {"exact": 0.9, "wrong_top1": 0.2}}}}
    verdicts = {v["name"]: v["passed"] for v in check_thresholds(
        results, {"min_exact": 0.8, "max_wrong": 0.1, "min_locomo_source_hit5": 0.5})}
    assert verdicts == {"min_exact": True, "max_wrong": False, "min_locomo_source_hit5": False}
    with pytest.raises(ValueError):
        check_thresholds(results, {"min_bogus": 1.0})


def test_locomo_questions_are_interleaved_by_category() -> None:
    from breadcrumb.eval.locomo import LocomoQuestion, interleave

    def lq(cat: int, n: int) -> LocomoQuestion:
        return LocomoQuestion("26", "locomo-26", f"q{cat}-{n}", cat, (), ())

    mixed = [lq(2, 0), lq(2, 1), lq(2, 2), lq(1, 0), lq(5, 0), lq(1, 1)]
    assert [q.question for q in interleave(mixed)] == [
        "q1-0", "q2-0", "q5-0", "q1-1", "q2-1", "q2-2"]

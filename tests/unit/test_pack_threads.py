"""Lines by meaning spread over the threads that hold them (LongMemEval multi-session:
"how many days a week do I attend fitness classes" is told in several sessions)."""

from __future__ import annotations

from breadcrumb.query_api.recall.extract import pack as packing


def _picks(groups: list[str] | None) -> list[int]:
    scores = [1.0, 0.95, 0.9, 0.7]  # three lines of session A, then one of session B
    texts = ["a one", "a two", "a three", "b one"]
    terms = [frozenset({t}) for t in ("x1", "x2", "x3", "x4")]
    return packing._picks(scores, texts, terms, {}, 2, lambda _t: 1, 40, groups)


def test_a_line_of_a_thread_not_yet_in_the_evidence_goes_first() -> None:
    assert _picks(None) == [0, 1]  # by score alone: two lines of session A
    assert _picks(["A", "A", "A", "B"]) == [0, 3]  # session B's line beats A's second
    assert _picks(["A", "A", "A", "A"]) == [0, 1]  # one thread: the scores decide


def test_the_thread_bonus_keeps_the_lazy_greedy_exact() -> None:
    """A key only falls as lines are picked (a thread's bonus goes once it is in), so the
    lazy greedy still picks what a full max() per pick would."""
    scores = [0.9, 0.85, 0.8, 0.5, 0.45, 0.4]
    groups = ["A", "A", "B", "B", "C", "C"]
    picks = packing._picks(scores, [f"l{i}" for i in range(6)],
                           [frozenset() for _ in range(6)], {}, 4, lambda _t: 1, 40, groups)
    assert picks == [0, 2, 4, 1]  # A, then B and C by their bonus, then the best left

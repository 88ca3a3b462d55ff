"""Level 3 over the learned ranking: which quotes of a model count (one function)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from breadcrumb.query_api.recall.extract.learned import choose


def test_quotes_count_only_as_lines_shown_and_in_the_models_order() -> None:
    texts = ["DB_PORT=5433", "retry = 3", "DB_PORT=5433", "timeout_seconds = 47 # raised",
             "timeout_seconds = 30 # old", "never shown"]
    order = [0, 1, 2, 3, 4]  # "never shown" is not among the ranked lines
    seen: list[str] = []

    def model(question: str, source: str) -> Sequence[str]:
        seen.append(source)
        return ["timeout_seconds = 47", "  retry = 3 ", "never shown", "timeout_seconds",
                "DB_PORT=9999", ""]

    errors: Counter[str] = Counter()
    assert choose.chosen("which timeout?", texts, order, model, errors) == [3, 1]
    assert seen[0].splitlines() == ["DB_PORT=5433", "retry = 3",
                                    "timeout_seconds = 47 # raised", "timeout_seconds = 30 # old"]
    # a line not shown, a part of two lines, a made-up value
    assert errors["quotes_dropped"] == 3


def test_a_failing_model_is_counted_and_chooses_nothing() -> None:
    def model(question: str, source: str) -> Sequence[str]:
        raise TimeoutError("no answer")

    errors: Counter[str] = Counter()
    assert choose.chosen("q", ["a line"], [0], model, errors) == []
    assert errors["quoter"] == 1
    assert choose.chosen("q", [], [], model, errors) == []  # nothing to show: not asked
    assert errors["quoter"] == 1


def test_the_lines_shown_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(choose, "MAX_CHARS", 25)
    shown: list[str] = []

    def model(question: str, source: str) -> Sequence[str]:
        shown.append(source)
        return []

    texts = [f"line number {i}" for i in range(100)]
    choose.chosen("q", texts, list(range(100)), model, Counter())
    assert shown[0].splitlines() == ["line number 0"]
    monkeypatch.setattr(choose, "MAX_CHARS", 10**6)
    choose.chosen("q", texts, list(range(100)), model, Counter())
    assert len(shown[1].splitlines()) == choose.SHOWN

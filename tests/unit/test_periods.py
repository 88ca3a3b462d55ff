"""The calendar period a question names (explicit dates only)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from breadcrumb.query_api.recall.extract.periods import asked_period, within


def _d(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(("text", "start", "end"), [
    ("What setback did Melanie face in October 2023?", _d(2023, 10, 1), _d(2023, 11, 1)),
    ("What did she donate in December 2023?", _d(2023, 12, 1), _d(2024, 1, 1)),
    ("What painting did she show on October 13, 2023?", _d(2023, 10, 13), _d(2023, 10, 14)),
    ("What did Gina find on 1 February, 2023?", _d(2023, 2, 1), _d(2023, 2, 2)),
    ("the 3rd of May 2023", _d(2023, 5, 3), _d(2023, 5, 4)),
    ("in Sept. 2022", _d(2022, 9, 1), _d(2022, 10, 1)),
    ("How many times did she go to the beach in 2023?", _d(2023, 1, 1), _d(2024, 1, 1)),
    ("2023年12月に何を寄付した？", _d(2023, 12, 1), _d(2024, 1, 1)),
    ("2023年12月3日の会議", _d(2023, 12, 3), _d(2023, 12, 4)),
    ("deployed on 2024-03-05", _d(2024, 3, 5), _d(2024, 3, 6)),
])
def test_an_explicit_date_names_its_period(text: str, start: datetime, end: datetime) -> None:
    assert asked_period(text) == (start, end)


@pytest.mark.parametrize("text", [
    "When did Melanie go camping in June?",  # no year: nothing anchors it
    "what port does the db use, 2023 or 5432?",  # a bare number is no period
    "What did she do last week?",
    "set MAX_RETRY to 2020",
])
def test_no_explicit_date_names_no_period(text: str) -> None:
    assert asked_period(text) is None


def test_within_widens_the_period() -> None:
    period = (_d(2023, 8, 1), _d(2023, 9, 1))
    week, two = timedelta(days=7), timedelta(days=14)
    assert within(_d(2023, 8, 20), period, week, two)
    assert within(_d(2023, 9, 10), period, week, two)  # "last week I ..." said after
    assert within(_d(2023, 7, 28), period, week, two)
    assert not within(_d(2023, 9, 20), period, week, two)
    assert not within(_d(2023, 7, 1), period, week, two)

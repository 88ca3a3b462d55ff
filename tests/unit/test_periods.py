"""The calendar period a question names (explicit dates only)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

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


# --- relative periods, anchored on a fixed ``now`` (Thursday 3 December 2026) ----------------

_NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(("text", "start", "end"), [
    ("What did I fix yesterday?", _d(2026, 12, 2), _d(2026, 12, 3)),
    ("昨日の会議で決めたことは？", _d(2026, 12, 2), _d(2026, 12, 3)),
    ("what did we decide three weeks ago?", _d(2026, 11, 9), _d(2026, 11, 16)),
    ("3週間前に決めたこと", _d(2026, 11, 9), _d(2026, 11, 16)),
    ("３週間前の設定", _d(2026, 11, 9), _d(2026, 11, 16)),  # full-width digit
    ("三週間前の設定", _d(2026, 11, 9), _d(2026, 11, 16)),
    ("what did we deploy last Saturday?", _d(2026, 11, 28), _d(2026, 11, 29)),
    ("先週の土曜日に何をデプロイした？", _d(2026, 11, 28), _d(2026, 11, 29)),
    ("which port did we use in March?", _d(2026, 3, 1), _d(2026, 4, 1)),
    ("3月に何を変えた？", _d(2026, 3, 1), _d(2026, 4, 1)),
    ("what changed in December?", _d(2026, 12, 1), _d(2027, 1, 1)),  # has begun: this one
    ("2 days ago", _d(2026, 12, 1), _d(2026, 12, 2)),
    ("2 months ago", _d(2026, 10, 1), _d(2026, 11, 1)),
    ("3ヶ月前", _d(2026, 9, 1), _d(2026, 10, 1)),
    ("last week", _d(2026, 11, 23), _d(2026, 11, 30)),
    ("which bike did I service the past weekend?", _d(2026, 11, 28), _d(2026, 11, 30)),
    ("what did we ship last weekend?", _d(2026, 11, 28), _d(2026, 11, 30)),
    ("先週末に何をした？", _d(2026, 11, 28), _d(2026, 11, 30)),
    ("先月のリリース", _d(2026, 11, 1), _d(2026, 12, 1)),
    ("去年の障害", _d(2025, 1, 1), _d(2026, 1, 1)),
])
def test_a_relative_period_is_anchored_on_now(text: str, start: datetime,
                                              end: datetime) -> None:
    assert asked_period(text, _NOW) == (start, end)


def test_a_month_not_yet_begun_is_last_years() -> None:
    june = datetime(2026, 6, 10, tzinfo=UTC)
    assert asked_period("in December", june) == (_d(2025, 12, 1), _d(2026, 1, 1))
    assert asked_period("12月に", june) == (_d(2025, 12, 1), _d(2026, 1, 1))


def test_last_saturday_asked_on_a_saturday_is_a_week_before() -> None:
    saturday = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
    assert asked_period("last Saturday", saturday) == (_d(2026, 11, 21), _d(2026, 11, 22))
    assert asked_period("先週の土曜日", saturday) == (_d(2026, 11, 21), _d(2026, 11, 22))


def test_the_past_weekend_asked_on_a_sunday_began_yesterday() -> None:
    sunday = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
    assert asked_period("this past weekend", sunday) == (_d(2026, 11, 28), _d(2026, 11, 30))


def test_now_is_read_in_its_own_offset() -> None:
    tokyo = datetime(2026, 12, 3, 1, 0, tzinfo=timezone(timedelta(hours=9)))  # 2 Dec 16:00 UTC
    start, end = asked_period("昨日", tokyo) or (None, None)
    assert start == datetime(2026, 12, 1, 15, 0, tzinfo=UTC)  # 2 Dec 00:00 +09:00
    assert end == datetime(2026, 12, 2, 15, 0, tzinfo=UTC)


def test_an_explicit_date_wins_over_a_relative_one() -> None:
    assert asked_period("yesterday, i.e. on 2024-03-05", _NOW) == (_d(2024, 3, 5),
                                                                  _d(2024, 3, 6))


@pytest.mark.parametrize("text", [
    "what did I fix yesterday?", "3週間前", "last Saturday", "in March", "3月に",
])
def test_without_now_a_relative_phrase_names_no_period(text: str) -> None:
    assert asked_period(text) is None


@pytest.mark.parametrize("text", [
    "in may be the cause", "what port, 3 or 5?", "the 3ヶ月 plan", "set RETRY to 3",
])
def test_words_that_only_look_relative_name_no_period(text: str) -> None:
    assert asked_period(text, _NOW) is None

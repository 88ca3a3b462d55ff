"""Lines said within the period a question names are lifted (semantic Extract)."""

from __future__ import annotations

from typing import Any

from breadcrumb.processors.lexical import query_terms
from breadcrumb.query_api.recall.extract.dated import dated_events
from breadcrumb.query_api.recall.lines.scoring import DATE_BOOST, score_semantic
from breadcrumb.query_api.recall.passages import Found, Passage
from breadcrumb.query_api.recall.question import analyze_query
from breadcrumb.topics.records import Event


class _Raw:
    """The one RawEventStore method dated_events reads (a unit test of one function)."""

    def __init__(self, stamps: dict[str, str]) -> None:
        self.stamps = stamps

    def get_event(self, user_id: str, event_id: str) -> Any:
        ts = self.stamps.get(event_id)
        if ts is None or user_id != "u1":
            return None
        return Event(event_id, user_id, "t", ts, "user", "message", "x", index=0)


def test_events_said_in_or_just_after_the_named_month_are_dated() -> None:
    raw = _Raw({"e1": "2023-08-14T10:00:00Z", "e2": "2023-09-08T10:00:00Z",
                "e3": "2023-05-02T10:00:00Z", "e4": "2023-10-01T10:00:00Z",
                "e5": "not a time"})
    q = "What recognition did Maria receive at the shelter in August 2023?"
    ids = ["e1", "e2", "e3", "e4", "e5", "missing"]
    assert dated_events(raw, "u1", q, ids) == {"e1", "e2"}  # type: ignore[arg-type]
    assert dated_events(raw, "u2", q, ids) == frozenset()  # type: ignore[arg-type]
    assert dated_events(raw, "u1", "What did Maria receive?", ids) == frozenset()  # type: ignore[arg-type]


def test_a_dated_line_outranks_an_equal_undated_one() -> None:
    q = "What did Maria receive at the homeless shelter in August 2023?"
    pool = [Found(Passage("e1", 1, 0, "Maria: the homeless shelter gave me a medal!"), "m1", 0.8),
            Found(Passage("e2", 9, 0, "Maria: the homeless shelter gave me a hug!"), "m2", 0.8)]
    plain = score_semantic(pool, query_terms(q), analyze_query(q), {})
    assert plain[0][0] == plain[1][0]
    ranked = score_semantic(pool, query_terms(q), analyze_query(q), {}, dated=frozenset({"e2"}))
    assert ranked[0][1].line.event_id == "e2"
    assert round(ranked[0][0] - ranked[1][0], 6) == DATE_BOOST



def test_a_relative_period_dates_events_only_when_now_anchors_it() -> None:
    from datetime import UTC, datetime

    raw = _Raw({"e1": "2026-11-28T18:00:00Z", "e2": "2026-11-21T18:00:00Z"})
    now = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)  # a Thursday
    for q in ("What did we deploy last Saturday?", "先週の土曜日に何をデプロイした？"):
        assert dated_events(raw, "u1", q, ["e1", "e2"], now) == {"e1"}  # type: ignore[arg-type]
        assert dated_events(raw, "u1", q, ["e1", "e2"]) == frozenset()  # type: ignore[arg-type]
    week_before = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)  # last Saturday: the 21st
    assert dated_events(raw, "u1", "last Saturday", ["e1", "e2"],  # type: ignore[arg-type]
                        week_before) == {"e1", "e2"}  # and the two weeks after it
    before_both = datetime(2026, 11, 19, 10, 0, tzinfo=UTC)  # last Saturday: the 14th
    assert dated_events(raw, "u1", "last Saturday", ["e2"],  # type: ignore[arg-type]
                        before_both) == {"e2"}
    long_before = datetime(2026, 11, 5, 10, 0, tzinfo=UTC)  # last Saturday: 31 Oct
    assert dated_events(raw, "u1", "last Saturday", ["e1", "e2"],  # type: ignore[arg-type]
                        long_before) == frozenset()

"""Candidate events said within the period a question names ("in August 2023").

A conversation's turns carry their time; a question about what happened in a named
month or on a named day is best answered by what was said then, or in the days after
("last week I ..."). Semantic Extract lifts those events' lines a little
(:data:`.scoring.SEMANTIC`, ``date``); the words and meaning of a line still decide.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from breadcrumb.query_api.recall.as_of import parse_ts
from breadcrumb.query_api.recall.extract.periods import asked_period, within
from breadcrumb.stores.ports import RawEventStore

DATE_BEFORE = timedelta(days=2)  # said a little before the named period
DATE_AFTER = timedelta(days=14)  # or up to two weeks after it


def dated_events(raw: RawEventStore, user_id: str, query: str, event_ids: Iterable[str],
                 now: datetime | None = None) -> frozenset[str]:
    """Ids among ``event_ids`` said within the period ``query`` names (none named: empty);
    ``now`` anchors relative periods ("yesterday", "先週の土曜日")."""
    period = asked_period(query, now)
    if period is None:
        return frozenset()
    out = set()
    for eid in dict.fromkeys(event_ids):
        event = raw.get_event(user_id, eid)
        if event is None:
            continue
        try:
            ts = parse_ts(event.ts)
        except ValueError:  # an unparsable stored time: no date preference
            continue
        ts = ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)
        if within(ts, period, DATE_BEFORE, DATE_AFTER):
            out.add(eid)
    return frozenset(out)

"""The calendar period a question names: "in December 2023", "on May 3, 2023",
"on 1 February, 2023", "2023年12月", "in 2023".

Recall uses it to prefer evidence lines said within (or shortly after) that period:
events carry their time, and a question about "what X did in August 2023" is answered
by what was said then. Explicit dates come first; a month without a year ("in June") or
a relative phrase ("last week", "3週間前") names a period only when ``now`` anchors it
(:mod:`.relative_periods`). Pure: text (and ``now``) in, ``(start, end)`` out (UTC, end
exclusive).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from breadcrumb.query_api.recall.extract.relative_periods import relative_period

_MONTHS = {name: i + 1 for i, name in enumerate(
    "january february march april may june july august september october november"
    " december".split())}
_MONTHS.update({name[:3]: n for name, n in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MON = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS = [  # most specific first
    re.compile(rf"\b{_MON}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+{_YEAR}\b", re.I),
    re.compile(rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON},?\s+{_YEAR}\b", re.I),
    re.compile(rf"\b{_YEAR}-(?P<mnum>\d\d)-(?P<day>\d\d)\b"),
    re.compile(rf"{_YEAR}\s*年\s*(?P<mnum>\d{{1,2}})\s*月\s*(?P<day>\d{{1,2}})\s*日"),
    re.compile(rf"\b{_MON},?\s+(?:of\s+)?{_YEAR}\b", re.I),
    re.compile(rf"{_YEAR}\s*年\s*(?P<mnum>\d{{1,2}})\s*月"),
    re.compile(rf"\b{_YEAR}-(?P<mnum>\d\d)\b"),
    re.compile(rf"\b(?:in|during|of|since|throughout)\s+{_YEAR}\b(?![-/:.]\d)", re.I),
    re.compile(rf"(?<!\d){_YEAR}\s*年"),
]


def asked_period(text: str, now: datetime | None = None) -> tuple[datetime, datetime] | None:
    """The first explicit day, month or year the text names, as ``[start, end)`` in UTC;
    else, with ``now``, the first relative period it names ("yesterday", "3週間前")."""
    for pattern in _PATTERNS:
        for hit in pattern.finditer(text):
            period = _period(hit.groupdict())
            if period is not None:
                return period
    return relative_period(text, now) if now is not None else None


def _period(parts: dict[str, str | None]) -> tuple[datetime, datetime] | None:
    year = int(parts["year"] or 0)
    month = _month(parts.get("mon"), parts.get("mnum"))
    day_text = parts.get("day")
    day = int(day_text) if day_text else None
    try:
        if month is None:
            return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
        if day is None:
            start = datetime(year, month, 1, tzinfo=UTC)
            nxt = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
            return start, nxt
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:  # "February 30": no such day, no period
        return None
    return start, start + timedelta(days=1)


def _month(name: str | None, number: str | None) -> int | None:
    if name:
        return _MONTHS.get(name.lower().rstrip("."))
    if number and 1 <= int(number) <= 12:
        return int(number)
    return None


def within(ts: datetime, period: tuple[datetime, datetime], before: timedelta,
           after: timedelta) -> bool:
    """Whether ``ts`` falls in the period widened by ``before`` / ``after``."""
    return period[0] - before <= ts < period[1] + after

"""Relative periods a question names, anchored on ``now``: "yesterday", "three weeks ago",
"last Saturday", "in March", and 昨日, 3週間前, 先週の土曜日, 3月に.

:mod:`.periods` reads explicit dates ("in August 2023"); a relative phrase names a period
only once something anchors it. The anchor is the request's ``now`` (the request time
unless the caller gives one), taken in its own offset: "yesterday" asked at 01:00+09:00
is the Japanese yesterday. Weeks start on Monday. A month without a year ("in March",
"3月に") is the latest such month that has begun by ``now``. Pure: text and ``now`` in,
``(start, end)`` out (UTC, end exclusive).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta

Period = tuple[datetime, datetime]

_WORD_NUMBERS = {w: i + 1 for i, w in enumerate(
    "one two three four five six seven eight nine ten eleven twelve".split())}
_WORD_NUMBERS.update({"a": 1, "an": 1, "a couple of": 2, "couple of": 2, "a few": 3,
                      "few": 3})
_KANJI = {c: i + 1 for i, c in enumerate("一二三四五六七八九")}
_KANJI.update({"十": 10, "数": 3})
_NUM = r"(?P<n>\d{1,3}|" + "|".join(sorted(map(re.escape, _WORD_NUMBERS),
                                           key=len, reverse=True)) + ")"
_JNUM = r"(?P<n>\d{1,3}|[一二三四五六七八九十数]{1,3})"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_JWEEKDAYS = "月火水木金土日"
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_EN_MONTH = r"(?P<mon>" + "|".join(_MONTHS + tuple(m[:3] for m in _MONTHS if m != "may")
                                   + ("sept",)) + r")\b\.?"


def _number(text: str) -> int:
    text = text.lower()
    if text.isdigit():
        return int(text)
    if text in _WORD_NUMBERS:
        return _WORD_NUMBERS[text]
    if text.startswith("十"):  # 十, 十二
        return 10 + (_KANJI.get(text[1:], 0) if len(text) > 1 else 0)
    if len(text) >= 2 and text[1] == "十":  # 二十, 二十一
        return _KANJI.get(text[0], 0) * 10 + (_KANJI.get(text[2:], 0) if len(text) > 2 else 0)
    return _KANJI.get(text, 0)


# --- calendar helpers on the anchor's local day ---------------------------------------------

def _day(d: date, now: datetime, days: int = 1) -> Period:
    start = datetime.combine(d, time(), tzinfo=now.tzinfo)
    return start.astimezone(UTC), (start + timedelta(days=days)).astimezone(UTC)


def _week_of(d: date, now: datetime) -> Period:
    return _day(d - timedelta(days=d.weekday()), now, 7)


def _month_of(year: int, month: int, now: datetime) -> Period:
    start = date(year, month, 1)
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return _day(start, now, (nxt - start).days)


def _year_of(year: int, now: datetime) -> Period:
    return _day(date(year, 1, 1), now, (date(year + 1, 1, 1) - date(year, 1, 1)).days)


def _months_back(today: date, n: int) -> tuple[int, int]:
    total = today.year * 12 + today.month - 1 - n
    return total // 12, total % 12 + 1


def _ago(unit: str, n: int, now: datetime) -> Period | None:
    today = now.date()
    if n <= 0 or n > 1000:
        return None
    if unit in ("day", "日"):
        return _day(today - timedelta(days=n), now)
    if unit in ("week", "週間", "週"):
        return _week_of(today - timedelta(weeks=n), now)
    if unit in ("month", "ヶ月", "か月", "カ月", "ケ月", "箇月"):
        return _month_of(*_months_back(today, n), now)
    if unit in ("year", "年"):
        return _year_of(today.year - n, now) if today.year - n >= 1 else None
    return None


def _last_weekday(weekday: int, now: datetime) -> Period:
    """The latest such weekday before today ("last Saturday", asked on a Monday: two
    days ago)."""
    today = now.date()
    back = (today.weekday() - weekday) % 7 or 7
    return _day(today - timedelta(days=back), now)


def _last_weekend(now: datetime) -> Period:
    """"last weekend", "the past weekend", 先週末: the latest Saturday before today and
    its Sunday (asked on a Sunday: this one, begun yesterday)."""
    saturday = _last_weekday(5, now)[0].astimezone(now.tzinfo).date()
    return _day(saturday, now, 2)


def _weekday_last_week(weekday: int, now: datetime) -> Period:
    """先週の土曜日: that weekday in the previous (Monday-started) week."""
    today = now.date()
    monday = today - timedelta(days=today.weekday() + 7)
    return _day(monday + timedelta(days=weekday), now)


def _month_named(month: int, now: datetime) -> Period:
    """The latest ``month`` that has begun by ``now`` (this year's, else last year's)."""
    today = now.date()
    return _month_of(today.year if month <= today.month else today.year - 1, month, now)


# --- the phrases, most specific first --------------------------------------------------------

_Rule = tuple[re.Pattern[str], Callable[[re.Match[str], datetime], Period | None]]
_RULES: list[_Rule] = [
    (re.compile(r"一昨日|おととい|\bday before yesterday\b", re.I),
     lambda m, now: _day(now.date() - timedelta(days=2), now)),
    (re.compile(r"昨日|きのう|\byesterday\b", re.I),
     lambda m, now: _day(now.date() - timedelta(days=1), now)),
    (re.compile(r"先週の?(?P<wd>[月火水木金土日])曜"),
     lambda m, now: _weekday_last_week(_JWEEKDAYS.index(m["wd"]), now)),
    (re.compile(r"\blast\s+(?P<wd>" + "|".join(_WEEKDAYS) + r")\b", re.I),
     lambda m, now: _last_weekday(_WEEKDAYS.index(m["wd"].lower()), now)),
    (re.compile(rf"\b{_NUM}\s+(?P<unit>day|week|month|year)s?\s+(?:ago|back|earlier)\b",
                re.I),
     lambda m, now: _ago(m["unit"].lower(), _number(m["n"]), now)),
    (re.compile(rf"{_JNUM}\s*(?P<unit>日|週間|週|ヶ月|か月|カ月|ケ月|箇月|年)\s*前(?!半)"),
     lambda m, now: _ago(m["unit"], _number(m["n"]), now)),
    (re.compile(r"先週末|\b(?:last|(?:this |the )?past)\s+weekend\b", re.I),
     lambda m, now: _last_weekend(now)),
    (re.compile(r"先週|\blast week\b", re.I),
     lambda m, now: _week_of(now.date() - timedelta(weeks=1), now)),
    (re.compile(r"先月|\blast month\b", re.I),
     lambda m, now: _month_of(*_months_back(now.date(), 1), now)),
    (re.compile(r"去年|昨年|\blast year\b", re.I),
     lambda m, now: _year_of(now.year - 1, now)),
    (re.compile(rf"\b(?:in|during|since|throughout|back in|early|late|mid)[\s-]+{_EN_MONTH}"
                r"(?!\s*,?\s*(?:\d|of\s+\d))", re.I),
     lambda m, now: (None if m["mon"] == "may" else  # "in may be": only "in May"
                     _month_named(_month_index(m["mon"]), now))),
    (re.compile(r"(?<![\d年ヶか])(?P<mnum>1[0-2]|0?[1-9])\s*月(?!\s*\d)(?:に|の|中|頃|ごろ|は|、|$)"),
     lambda m, now: _month_named(int(m["mnum"]), now)),
]


def _month_index(name: str) -> int:
    name = name.lower().rstrip(".")
    return next(i + 1 for i, full in enumerate(_MONTHS) if full.startswith(name[:3]))


def relative_period(text: str, now: datetime) -> Period | None:
    """The first relative period ``text`` names, anchored on ``now`` (naive: UTC)."""
    now = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    text = unicodedata.normalize("NFKC", text)  # ３週間前 -> 3週間前
    for pattern, resolve in _RULES:
        for hit in pattern.finditer(text):
            period = resolve(hit, now)
            if period is not None:
                return period
    return None

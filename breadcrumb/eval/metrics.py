"""Metric functions of the evaluation: pure, no I/O, hand-testable.

A method returns ranked :class:`Item` s. An item covers an inclusive span of event
indices of one thread of one tenant (a memory's ``source_range``, an evidence range,
or a single raw event). A labelled answer is a :class:`Span` too (one event, or the
memory holding it), so every hit metric is "does one of the first k items overlap a
target span".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Span:
    """Events ``start..end`` (inclusive) of thread ``thread_id`` of tenant ``user_id``."""

    user_id: str
    thread_id: str
    start: int
    end: int

    def overlaps(self, other: Span) -> bool:
        """Same tenant, same thread and at least one event in common."""
        return (self.user_id == other.user_id and self.thread_id == other.thread_id
                and self.start <= other.end and other.start <= self.end)


@dataclass(frozen=True, slots=True)
class Item:
    """One ranked thing a method returned, with what a person needs to inspect it."""

    span: Span
    text: str
    event_ids: tuple[str, ...] = ()
    memory_id: str | None = None
    score: float = 0.0
    score_parts: dict[str, float] = field(default_factory=dict)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON view (text shortened: the report shows ranges, scores and reasons)."""
        return {"user_id": self.span.user_id, "thread_id": self.span.thread_id,
                "start_index": self.span.start, "end_index": self.span.end,
                "memory_id": self.memory_id, "event_ids": list(self.event_ids),
                "score": self.score, "score_parts": self.score_parts, "reason": self.reason,
                "text": self.text[:300]}


def hit_at_k(items: Sequence[Item], targets: Iterable[Span], k: int) -> bool:
    """True when one of the first ``k`` items overlaps one of the target spans."""
    wanted = list(targets)
    return any(item.span.overlaps(t) for item in items[:k] for t in wanted)


def wrong_top1(items: Sequence[Item], user_id: str, expected: Sequence[Span],
               distractors: Sequence[Span]) -> bool:
    """The first item misleads: it misses every expected span and is from another tenant,
    from a thread none of the expected spans is in, or overlaps a labelled distractor
    (a look-alike or a superseded value). No item at all is a miss, not a wrong memory."""
    if not items:
        return False
    top = items[0].span
    if any(top.overlaps(t) for t in expected):
        return False
    if top.user_id != user_id:
        return True
    threads = {(t.user_id, t.thread_id) for t in expected}
    if (top.user_id, top.thread_id) not in threads:
        return True
    return any(top.overlaps(d) for d in distractors)


def exact_value_hit(text: str, value: str) -> bool:
    """The expected value appears verbatim (byte for byte) in the returned text."""
    return bool(value) and value in text


def stale_value_shown(text: str, value: str | None, stale: Sequence[str]) -> bool:
    """A superseded value is returned without the current one."""
    return any(s in text for s in stale) and not (value and value in text)


def evidence_recall(returned_text: str, evidence_texts: Sequence[str]) -> float:
    """Share of the evidence texts that appear verbatim in the returned text."""
    if not evidence_texts:
        return 0.0
    return sum(1 for t in evidence_texts if t and t in returned_text) / len(evidence_texts)


def rate(flags: Iterable[bool | None]) -> float | None:
    """Share of True among the non-None flags; None when there is none."""
    values = [bool(f) for f in flags if f is not None]
    return sum(values) / len(values) if values else None


def mean(values: Iterable[float | None]) -> float | None:
    """Arithmetic mean of the non-None values; None when there is none."""
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Linear-interpolated percentile (``pct`` in 0..100); None for no values."""
    if not values:
        return None
    if not 0 <= pct <= 100:
        raise ValueError(f"percentile must be within 0..100, got {pct}")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * pct / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

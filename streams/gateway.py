"""What the query service needs from the write side, whichever mode runs it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import orjson

from breadcrumb.processors.json_sanity import printable
from breadcrumb.processors.validate import NO_LIMITS, EventLimits, Rejection, validate_event
from breadcrumb.topics.records import DeadLetter, Event


@dataclass(slots=True)
class SubmitResult:
    """The answer of ``POST /v1/events`` (contract)."""

    accepted: int = 0
    duplicates: int = 0
    rejected: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"accepted": self.accepted, "duplicates": self.duplicates, "rejected": self.rejected}


class Gateway(Protocol):
    """Accepts events durably and reports progress (embedded runner or Kafka producer)."""

    def submit(self, items: Sequence[Any], source: str = "http") -> SubmitResult: ...

    def request_flush(self, user_id: str, thread_id: str, reason: str = "flush") -> None:
        """Ask for a thread's open window to be closed (a keyed control message)."""
        ...

    def pending(self) -> int:
        """Accepted events not yet part of a memory (unprocessed + open windows)."""
        ...

    def unprocessed(self) -> int:
        """Accepted log entries the processors have not handled yet."""
        ...

    def wait_processed(self, timeout: float) -> None:
        """Block until every accepted entry is handled; raise TimeoutError otherwise."""
        ...

    def counters(self) -> dict[str, int]: ...


@runtime_checkable
class MeasuresFreshness(Protocol):
    """A gateway that measures accepted → recallable / → memory (``/v1/stats``)."""

    def freshness(self) -> dict[str, Any]: ...


@runtime_checkable
class PendingByThread(Protocol):
    """A gateway that tells one thread's backlog (``GET /v1/threads/{id}/pending``): an
    import waits for its own events, not for every other import's (issue 29)."""

    def thread_pending(self, user_id: str, thread_id: str) -> dict[str, int]: ...


@runtime_checkable
class TwoSpeeds(Protocol):
    """A gateway whose memories' passage vectors may follow later (two speeds)."""

    def passages_pending(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Checked:
    """A batch split into valid events (with their original JSON) and dead letters."""

    valid: list[tuple[Event, bytes]]
    letters: list[DeadLetter]
    rejected: list[dict[str, Any]]


def limits_of(settings: Any) -> EventLimits:
    """The intake limits (issue 12) of a ``Settings``."""
    return EventLimits(content_chars=settings.limit_content_chars,
                       attrs_depth=settings.limit_attrs_depth)


def check_batch(items: Sequence[Any], received_at: str, source: str,
                limits: EventLimits = NO_LIMITS) -> Checked:
    """Validate a batch; each invalid item becomes a dead letter naming its field."""
    valid: list[tuple[Event, bytes]] = []
    letters: list[DeadLetter] = []
    rejected: list[dict[str, Any]] = []
    for position, item in enumerate(items):
        outcome = validate_event(item, limits)
        if isinstance(outcome, Rejection):
            rejected.append({"position": position, "error": outcome.message()})
            letters.append(_letter(item, outcome, received_at, source))
        else:
            valid.append((outcome, orjson.dumps(item)))
    return Checked(valid, letters, rejected)


def _letter(item: Any, why: Rejection, received_at: str, source: str) -> DeadLetter:
    payload = safe_dumps(item)
    event_id = item.get("event_id") if isinstance(item, dict) else None
    user_id = item.get("user_id") if isinstance(item, dict) else None
    event_id = printable(event_id) if isinstance(event_id, str) else None
    user_id = printable(user_id) if isinstance(user_id, str) else None
    return DeadLetter(
        reason=why.message(),
        payload=payload,
        received_at=received_at,
        field=why.field,
        source=source,
        event_id=event_id,
        user_id=user_id,
    )


def safe_dumps(item: Any) -> str:
    """JSON text of anything a caller handed in, for a dead letter: lone surrogates are
    escaped, huge integers and NaN written as Python would, absurd nesting summarised."""
    try:
        return orjson.dumps(item, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        pass
    try:
        return json.dumps(item, default=str, ensure_ascii=True)
    except (RecursionError, ValueError, TypeError):
        return printable(repr(item)[:10_000])

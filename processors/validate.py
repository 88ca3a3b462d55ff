"""Event validation: a mapping in, an ``Event`` or a ``Rejection`` (failure as data) out."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from topics.records import Event
from topics.schema import event_validator

_REQUIRED_RE = re.compile(r"'([^']+)' is a required property")
_EXTRA_RE = re.compile(r"\('([^']+)'")


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why an input was refused, naming the field when there is one."""

    reason: str
    field: str | None = None

    def message(self) -> str:
        return f"field '{self.field}': {self.reason}" if self.field else self.reason


def validate_event(data: Any) -> Event | Rejection:
    """Check one event against the contract; the first error names its field."""
    if not isinstance(data, dict):
        return Rejection(f"an event must be a JSON object, got {type(data).__name__}")
    errors = sorted(event_validator().iter_errors(data), key=lambda e: (list(e.path), e.message))
    if errors:
        return _rejection_from(errors[0])
    ts_problem = _check_timestamp(data["ts"])
    if ts_problem:
        return Rejection(ts_problem, "ts")
    return Event.from_dict(data)


def _rejection_from(error: Any) -> Rejection:
    path = [str(p) for p in error.path]
    if error.validator == "required":
        match = _REQUIRED_RE.search(error.message)
        return Rejection("is required", match.group(1) if match else None)
    if error.validator == "additionalProperties":
        match = _EXTRA_RE.search(error.message)
        name = match.group(1) if match else None
        return Rejection("is not a field of the event schema", name)
    return Rejection(error.message, ".".join(path) or None)


def _check_timestamp(value: str) -> str | None:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return f"{value!r} is not an RFC 3339 date-time"
    if parsed.tzinfo is None:
        return f"{value!r} has no UTC offset (RFC 3339 needs one, e.g. 'Z' or '+09:00')"
    return None

"""Contract validation: every rejection names its field and reason."""

from __future__ import annotations

import pytest

from breadcrumb.processors.validate import Rejection, validate_event
from breadcrumb.topics.records import Event

GOOD = {
    "event_id": "e1", "user_id": "u1", "thread_id": "t1", "ts": "2026-11-01T10:00:00+09:00",
    "role": "user", "kind": "message", "content": "hello  \r\n世界 🎉",
}


def test_valid_event_keeps_content_byte_for_byte() -> None:
    event = validate_event(dict(GOOD))
    assert isinstance(event, Event)
    assert event.content == GOOD["content"]
    assert event.to_dict() == GOOD


@pytest.mark.parametrize(
    ("change", "field", "fragment"),
    [
        ({"role": "robot"}, "role", "is not one of"),
        ({"kind": "chat"}, "kind", "is not one of"),
        ({"ts": "yesterday"}, "ts", "RFC 3339"),
        ({"ts": "2026-11-01T10:00:00"}, "ts", "UTC offset"),
        ({"index": -1}, "index", "minimum"),
        ({"event_id": ""}, "event_id", "non-empty"),
        ({"surprise": 1}, "surprise", "not a field"),
        ({"content": 42}, "content", "not of type"),
    ],
)
def test_invalid_fields_are_named(change: dict, field: str, fragment: str) -> None:
    outcome = validate_event({**GOOD, **change})
    assert isinstance(outcome, Rejection)
    assert outcome.field == field
    assert fragment in outcome.reason
    assert field in outcome.message()


def test_missing_required_field() -> None:
    data = dict(GOOD)
    del data["thread_id"]
    outcome = validate_event(data)
    assert isinstance(outcome, Rejection)
    assert (outcome.field, outcome.reason) == ("thread_id", "is required")


def test_non_object_is_rejected() -> None:
    outcome = validate_event(["not", "an", "event"])
    assert isinstance(outcome, Rejection)
    assert "JSON object" in outcome.reason

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


@pytest.mark.parametrize(
    ("change", "field", "fragment"),
    [
        ({"content": "x\ud800"}, "content", "lone surrogate"),
        ({"thread_id": "\udfff"}, "thread_id", "lone surrogate"),
        ({"attrs": {"a": ["ok", "x\ud800"]}}, "attrs.a.1", "lone surrogate"),
        ({"attrs": {"k\ud800": 1}}, "attrs", "object key"),
        ({"attrs": {"n": 2**63}}, "attrs.n", "out of range"),
        ({"attrs": {"n": -(2**63) - 1}}, "attrs.n", "out of range"),
        ({"attrs": {"f": float("nan")}}, "attrs.f", "NaN"),
        ({"attrs": {"f": float("inf")}}, "attrs.f", "NaN"),
        ({"attrs": {"s": {1, 2}}}, "attrs.s", "not a JSON value"),
        ({"attrs": {1: "x"}}, "attrs", "not a string"),
        ({"index": 2**63}, "index", "at most"),
        ({"index": 2**53}, "index", "at most"),
        ({"tokens": 2**70}, "tokens", "at most"),
        ({"index": 3.0}, "index", "integer"),
    ],
)
def test_values_no_json_consumer_could_store_are_named(
        change: dict, field: str, fragment: str) -> None:
    outcome = validate_event({**GOOD, **change})
    assert isinstance(outcome, Rejection)
    assert (outcome.field, fragment in outcome.reason) == (field, True), outcome
    outcome.message().encode("utf-8")  # storable: no lone surrogate in the reason


def test_limits_apply_only_when_given() -> None:
    from breadcrumb.processors.validate import EventLimits

    deep: dict = {}
    inner = deep
    for _ in range(10):
        inner["a"] = {}
        inner = inner["a"]
    event = {**GOOD, "content": "y" * 100, "attrs": deep}
    assert isinstance(validate_event(event), Event)
    small = validate_event(event, EventLimits(content_chars=99))
    assert isinstance(small, Rejection) and small.field == "content"
    shallow = validate_event(event, EventLimits(attrs_depth=5))
    assert isinstance(shallow, Rejection) and shallow.field.startswith("attrs")
    assert isinstance(validate_event({**GOOD, "index": 2**53 - 1}), Event)


def test_a_rejected_key_with_a_surrogate_is_storable() -> None:
    outcome = validate_event({**GOOD, "x\ud800": 1})
    assert isinstance(outcome, Rejection)
    outcome.message().encode("utf-8")


def test_every_missing_required_field_is_named() -> None:
    """Issue 30: the reason names each missing field, not only the first."""
    from breadcrumb.processors.validate import explain_shape

    event = {k: v for k, v in GOOD.items() if k not in ("thread_id", "ts", "user_id")}
    for outcome in (validate_event(event), explain_shape(event)):
        assert isinstance(outcome, Rejection)
        assert outcome.message() == ("field 'thread_id': is required, and so are 'ts', "
                                     "'user_id'")

"""explain_shape: the SDK's check when jsonschema is not installed (the core install)."""

from __future__ import annotations

from typing import Any

import pytest

from breadcrumb.processors.validate import Rejection, explain_shape, plainly_valid, validate_event

GOOD: dict[str, Any] = {"event_id": "e1", "user_id": "u", "thread_id": "t", "role": "user",
                        "kind": "message", "content": "hi", "ts": "2026-01-01T00:00:00Z",
                        "index": 3, "attrs": {"path": "a.py"}, "project_id": None}

BAD: list[tuple[dict[str, Any], str]] = [
    ({k: v for k, v in GOOD.items() if k != "user_id"}, "user_id"),
    ({**GOOD, "colour": "red"}, "colour"),
    ({**GOOD, "event_id": ""}, "event_id"),
    ({**GOOD, "thread_id": "x" * 257}, "thread_id"),
    ({**GOOD, "role": "robot"}, "role"),
    ({**GOOD, "kind": 3}, "kind"),
    ({**GOOD, "content": None}, "content"),
    ({**GOOD, "attrs": []}, "attrs"),
    ({**GOOD, "index": -1}, "index"),
    ({**GOOD, "tokens": True}, "tokens"),
    ({**GOOD, "ts": "2026-01-01T00:00:00"}, "ts"),
    ({**GOOD, "ts": 17}, "ts"),
]


def test_a_plainly_valid_event_has_nothing_to_explain() -> None:
    assert plainly_valid(GOOD)
    assert explain_shape(GOOD) is None


@pytest.mark.parametrize(("event", "field"), BAD)
def test_each_broken_rule_is_named_and_the_schema_agrees(event: dict[str, Any],
                                                         field: str) -> None:
    assert not plainly_valid(event)
    problem = explain_shape(event)
    assert isinstance(problem, Rejection)
    assert problem.field == field
    by_schema = validate_event(event)  # jsonschema is installed here: the full check
    assert isinstance(by_schema, Rejection)
    assert by_schema.field == field

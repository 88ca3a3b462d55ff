"""The LLM observer's pure half: trimming, prompt, schema validation, merge rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from breadcrumb.processors.llm_prompt import (
    ObservationOutputError,
    PromptConfig,
    build_messages,
    merge_observation,
    render_event,
    trim_content,
    validate_output,
)
from breadcrumb.processors.observer import ObserverConfig, observe
from breadcrumb.topics.records import ClosedRange, Event, SourceRange


def _event(i: int, content: str, kind: str = "message", role: str = "user", **kw: Any) -> Event:
    return Event(f"e{i}", "u1", "t1", f"2026-01-01T00:00:{i:02d}Z", role, kind, content,
                 index=i, **kw)


EVENTS = [
    _event(0, "Please set the DB port to 6432 in config/database.yml"),
    _event(1, "cat config/database.yml", "tool_call", "assistant", tool="bash"),
    _event(2, "port: 5432\nhost: db.internal", "tool_result", "tool", tool="bash"),
    _event(3, "Decided: port 6432 via pgbouncer.", role="assistant"),
]
CLOSED = ClosedRange("u1", "p1", SourceRange("t1", 0, 3), tuple(e.event_id for e in EVENTS),
                     "boundary")
VALID = {"summary": "DB port moved to 6432 (pgbouncer).", "tags": ["Database", "config"],
         "query_hints": ["6432", "pgbouncer port change", "PGBOUNCER_POOL=40", "db.internal"],
         "retrieve_when": "When asked which port the database uses.", "importance": 0.8}


def test_small_content_is_kept_whole() -> None:
    assert trim_content("a\nb\nc") == "a\nb\nc"


def test_big_log_keeps_head_tail_and_error_lines() -> None:
    lines = [f"test_{i} PASSED" for i in range(2000)]
    lines[1234] = "tests/test_x.py::test_y FAILED - AssertionError: 3 != 4"
    trimmed = trim_content("\n".join(lines))
    kept = trimmed.splitlines()
    assert kept[:20] == lines[:20] and kept[-15:] == lines[-15:]
    assert lines[1234] in kept
    assert "… [1214 lines omitted] …" in kept and "… [750 lines omitted] …" in kept
    assert len(kept) == 20 + 1 + 15 + 2


def test_long_lines_and_events_are_clipped() -> None:
    cfg = PromptConfig(max_event_chars=100, max_line_chars=30)
    out = trim_content("x" * 500, cfg)
    assert len(out) <= 100 and out.endswith("…")
    assert len(trim_content("\n".join(["y" * 50] * 100), cfg).splitlines()[0]) == 30


def test_render_event_shows_role_kind_tool_attrs() -> None:
    event = _event(5, "ok", "test_result", "tool", tool="pytest", attrs={"exit_code": 0})
    assert render_event(event).splitlines()[0] == (
        '[5] tool/test_result tool=pytest attrs={"exit_code": 0}')


def test_messages_hold_events_and_known_values() -> None:
    base = observe(EVENTS, CLOSED, ObserverConfig())
    system, user = build_messages(EVENTS, CLOSED, base.query_hints)
    assert system["role"] == "system" and '"summary"' in system["content"]
    assert "Thread t1, events 0..3 (cut: boundary)" in user["content"]
    for event in EVENTS:
        assert event.content in user["content"]
    known = json.loads(user["content"].rsplit("\n", 1)[1])
    assert "config/database.yml" in known and "6432" in known


def test_validate_output_accepts_valid_and_names_every_problem() -> None:
    assert validate_output(dict(VALID)) == VALID
    with pytest.raises(ObservationOutputError) as info:
        validate_output({"summary": "", "tags": "db", "query_hints": [], "importance": 1.5,
                         "kind": "Not A Kind"})
    message = str(info.value)
    for part in ("'retrieve_when' is a required property", "summary: '' should be non-empty",
                 "tags: 'db' is not of type 'array'", "importance: 1.5 is greater than",
                 "kind: 'Not A Kind' does not match"):
        assert part in message, message
    with pytest.raises(ObservationOutputError, match="is not of type 'object'"):
        validate_output(["summary"])


def test_merge_keeps_identity_and_exact_hints() -> None:
    base = observe(EVENTS, CLOSED, ObserverConfig())
    merged = merge_observation(base, validate_output(dict(VALID)), EVENTS, "m1")
    assert merged.query_hints[: len(base.query_hints)] == base.query_hints
    added = merged.query_hints[len(base.query_hints):]
    assert "pgbouncer port change" in added  # plain phrase
    assert "PGBOUNCER_POOL=40" not in merged.query_hints  # value-shaped, not in the range
    assert merged.metadata["llm_dropped_hints"] == ["PGBOUNCER_POOL=40"]
    assert merged.metadata["observer"] == "llm/m1"
    assert {k: v for k, v in merged.metadata.items()
            if k not in ("observer", "llm_dropped_hints")} == base.metadata
    assert (merged.id, merged.source_range, merged.facts, merged.created_at) == (
        base.id, base.source_range, base.facts, base.created_at)
    assert merged.tags[: len(base.tags)] == base.tags and "database" in merged.tags
    assert merged.kind == base.kind and merged.importance == 0.8


def test_merge_adds_verbatim_values_and_model_kind() -> None:
    base = observe(EVENTS, CLOSED, ObserverConfig())
    extra = {**VALID, "query_hints": ["host: db.internal", "  "], "kind": "config"}
    merged = merge_observation(base, validate_output(extra), EVENTS, "m1")
    assert "host: db.internal" in merged.query_hints  # value-shaped but verbatim in the range
    assert merged.kind == "config" and "llm_dropped_hints" not in merged.metadata

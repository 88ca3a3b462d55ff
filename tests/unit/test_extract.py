"""Extract: verbatim lines, in source order, within the token budget."""

from __future__ import annotations

from processors.extract import extract_lines, split_lines
from processors.tokens import estimate_tokens
from topics.records import Event


def _event(index: int, content: str) -> Event:
    return Event(event_id=f"e{index}", user_id="u", thread_id="t", ts="2026-11-01T00:00:00Z",
                 role="tool", kind="tool_result", content=content, index=index)


def test_lines_are_exact_slices() -> None:
    event = _event(0, "a\r\n\r\n  b  \nc")
    for start, end, text in split_lines(event):
        assert event.content[start:end] == text


def test_long_log_yields_the_failing_line_under_budget() -> None:
    lines = [f"PASSED tests/test_mod.py::test_case_{i}" for i in range(2000)]
    lines[1234] = "FAILED tests/test_mod.py::test_case_1234 - AssertionError: 41 != 42"
    log = _event(3, "\n".join(lines))
    cut = extract_lines("which test failed in the pytest log?", [log], 60, estimate_tokens)
    assert cut.tokens <= 60
    assert lines[1234] in cut.text.splitlines()
    assert cut.event_ids == ["e3"]
    for line in cut.lines:
        assert log.content[line.start:line.end] == line.text


def test_budget_is_respected_and_order_is_source_order() -> None:
    events = [_event(i, f"EMAIL_RE regex line {i}\nunrelated") for i in range(10)]
    cut = extract_lines("EMAIL_RE regex", events, 30, estimate_tokens)
    assert 0 < cut.tokens <= 30
    indices = [ln.event_index for ln in cut.lines]
    assert indices == sorted(indices)

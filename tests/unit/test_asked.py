"""processors.asked: one predicate for "does this text hold what the question asks for",
read by Recall (near memories' chunks) and Extract (does the word-exact cut need meaning)."""

from __future__ import annotations

from breadcrumb.processors.asked import asks_anything, holds_asked

NONE: frozenset[str] = frozenset()


def test_a_failure_question_is_held_by_a_failure_line_or_a_diagnostic() -> None:
    assert holds_asked("ok\nTraceback (most recent call last):", NONE, True)
    assert holds_asked("internal/export/csv.go:4:2: undefined: csv", NONE, True)
    assert not holds_asked("internal/export/csv.go:4:2: undefined: csv", NONE, False)
    assert not holds_asked("UVM_ERROR :    0\n0 failed", NONE, True)  # counts of none


def test_a_command_question_is_held_by_a_shell_command_line() -> None:
    command = frozenset({"command"})
    assert holds_asked("We ran it:\ncd web && npm run build", command, False)
    assert not holds_asked("npm error code ERESOLVE", command, False)  # npm's own log


def test_a_value_kind_is_held_by_a_value_of_it() -> None:
    assert holds_asked("listening on\nPORT=8788", frozenset({"env"}), False)
    assert holds_asked("Running on http://127.0.0.1:8788", frozenset({"url"}), False)
    assert not holds_asked("the port moved", frozenset({"env", "url"}), False)


def test_a_question_that_asks_for_nothing_it_can_tell() -> None:
    assert not asks_anything(frozenset({"nodeid_unknown"}), False)
    assert asks_anything(frozenset({"command"}), False)
    assert asks_anything(NONE, True)
    assert asks_anything(frozenset({"port"}), False)

"""Pure supersession / conflict / verification / dedupe decisions."""

from __future__ import annotations

from breadcrumb.processors.supersession import (
    CONFLICTED,
    SUPERSEDED,
    FactRow,
    compare_facts,
    is_reversal,
    is_verification,
    memory_outcome,
    near_duplicate,
    reversal_verdicts,
)

OLD = FactRow("m-old", "env:DB_PORT", "5432", "2024-05-13T13:09:00Z")


def test_newer_value_supersedes_older() -> None:
    new = [FactRow("m-new", "env:DB_PORT", "6432", "2024-05-15T11:02:00Z")]
    [v] = compare_facts(new, [OLD])
    assert (v.kind, v.older, v.newer, v.old_value, v.new_value) == (
        SUPERSEDED, "m-old", "m-new", "5432", "6432")


def test_late_arriving_older_range_is_the_superseded_one() -> None:
    late = [FactRow("m-late", "env:DB_PORT", "5000", "2024-05-01T00:00:00Z")]
    [v] = compare_facts(late, [OLD])
    assert (v.older, v.newer) == ("m-late", "m-old")


def test_equal_values_and_own_rows_do_not_count() -> None:
    same = [FactRow("m-new", "env:DB_PORT", "5432", "2024-05-15T11:02:00Z")]
    assert compare_facts(same, [OLD, FactRow("m-new", "env:DB_PORT", "1", "x")]) == []


def test_same_timestamp_different_value_conflicts() -> None:
    [v] = compare_facts([FactRow("m-b", "env:DB_PORT", "7000", OLD.ts)], [OLD])
    assert v.kind == CONFLICTED and {v.older, v.newer} == {"m-old", "m-b"}


def test_reversal_phrases_en_ja() -> None:
    assert is_reversal(["Actually, let's not use pgbouncer."])
    assert is_reversal(["pgbouncer はやめよう"])
    assert is_reversal(["Please revert the regex change"])
    assert not is_reversal(["Set DB_PORT to 6432"])
    [v] = reversal_verdicts("m-new", "2024-06-01T00:00:00Z", ["env:DB_PORT"], [OLD])
    assert (v.kind, v.older, v.newer) == (SUPERSEDED, "m-old", "m-new")


def test_verification_signals() -> None:
    assert is_verification("test_result", "Tests: 3 passed", 0)
    assert not is_verification("test_result", "1 failed", 1)
    assert is_verification("test_result", "Tests: 3 passed, 3 total")
    assert not is_verification("test_result", "1 failed, 2 passed")
    assert is_verification("message", "OK, let's go with that.")
    assert not is_verification("message", "What port is it?")


def test_memory_outcome_partial_vs_whole() -> None:
    assert memory_outcome(["a", "b"], ["a"]) == "partial"
    assert memory_outcome(["a"], ["a"]) == SUPERSEDED
    assert memory_outcome([], []) == "partial"


def test_near_duplicate_needs_same_facts_and_similar_summary() -> None:
    facts = [("env:X", "1")]
    s = "Set X to 1 in the env file for the api service"
    assert near_duplicate(s, s + " ", facts, facts)
    assert not near_duplicate(s, s, facts, [("env:X", "2")])
    assert not near_duplicate(s, "something else entirely", facts, facts)
    assert not near_duplicate(s, s, [], [])


def test_a_sessions_settings_are_history_that_nothing_supersedes() -> None:
    """A session that moved to another folder or model (``session:<thread>#…``, issue 46)
    does not make the lines of its earlier settings wrong: a working directory stands in
    every path of the session. No verdict, no reversal, no wholly superseded memory."""
    key = "session:t1#working_directory"
    older = FactRow("m-old", key, "/srv/app", "2024-05-13T13:09:00Z")
    newer = [FactRow("m-new", key, "/srv/app/api", "2024-05-15T11:02:00Z")]
    assert compare_facts(newer, [older]) == []
    assert reversal_verdicts("m-new", "2024-05-15T11:02:00Z", [key], [older]) == []
    assert memory_outcome([key, "env:DB_PORT"], ["env:DB_PORT"]) == SUPERSEDED
    assert memory_outcome([key], []) == "partial"
    facts = {(key, "/srv/app"), ("env:DB_PORT", "5432")}
    assert near_duplicate("same summary", "same summary", facts,
                          {("session:t2#working_directory", "/srv/x"), ("env:DB_PORT", "5432")})

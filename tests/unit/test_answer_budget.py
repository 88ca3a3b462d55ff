"""The answer's one token budget (query_api.recall.budget): summaries, then evidence."""

from __future__ import annotations

from breadcrumb.query_api.recall.budget import EVIDENCE_FLOOR, evidence_tokens, listed


def test_memories_are_listed_while_their_summaries_fit_their_share() -> None:
    # evidence sought: the summaries may take half of 800
    assert listed([150, 150, 150, 150], 800, summary_only=False) == 2
    # a summary answer: all of it
    assert listed([150, 150, 150, 150], 800, summary_only=True) == 4
    # a later short one is not listed over a longer one it ranks below
    assert listed([300, 200, 10], 800, summary_only=False) == 1


def test_the_best_memory_is_always_listed() -> None:
    assert listed([900, 10], 800, summary_only=False) == 1
    assert listed([], 800, summary_only=False) == 0


def test_the_evidence_gets_what_the_summaries_leave_and_at_least_the_floor() -> None:
    assert evidence_tokens(800, [150, 150]) == 500
    assert evidence_tokens(800, [700]) == int(800 * EVIDENCE_FLOOR)
    assert evidence_tokens(4, [100]) == 1

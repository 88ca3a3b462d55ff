"""query_api.recall.sources: a question for a typed value also cuts the top chunks of the
ranked memories after the followed ones — only chunks holding a value of the asked kind
(real sessions a03 ``slowapi==0.1.9``, a07 ``Aider v0.83.1``: their memories ranked 8th
and 9th, their lines score first once cut)."""

from __future__ import annotations

from breadcrumb.processors.asked import holds_asked
from breadcrumb.query_api.recall.passages import Passage
from breadcrumb.query_api.recall.sources import (
    PRECISE_MEMORIES,
    lines_quoting,
    near_memories,
    summary_counts,
    with_near,
)
from breadcrumb.query_api.recall.stages import Candidate
from breadcrumb.topics.records import Event, Observation, SourceRange


def _cand(mid: str, score: float, summary: str = "") -> Candidate:
    memory = Observation(id=mid, user_id="alice", project_id=None, summary=summary or mid,
                         source_range=SourceRange("t1", 0, 0), tags=(), query_hints=(),
                         retrieve_when="", importance=0.5, created_at="2026-01-01T00:00:00Z")
    return Candidate(memory, score, {})


def test_near_memories_follow_the_followed_up_to_the_bound() -> None:
    ranked = [_cand(f"m{n}", 10.0 - n) for n in range(15)]
    near = near_memories(ranked, ["m0", "m2"])
    assert [c.memory.id for c in near] == [f"m{n}" for n in range(PRECISE_MEMORIES)
                                           if n not in (0, 2)]


def test_only_chunks_holding_the_asked_kind_join_and_none_twice() -> None:
    pin = Passage("e1", 3, 0, "# CORS and Security\nslowapi==0.1.9\n")
    prose = Passage("e2", 4, 0, "We set up rate limiting with slowapi for the endpoints.")
    found_before = [(_cand("m1", 5.0), [pin])]
    near = [_cand("m1", 5.0), _cand("m8", 2.0), _cand("m9", 1.0)]
    out = with_near(found_before, near, {"m1": [pin], "m8": [prose, pin], "m9": [prose]},
                    lambda text: holds_asked(text, frozenset({"version"}), False))
    assert [(c.memory.id, ps) for c, ps in out] == [("m1", [pin]), ("m8", [pin])]
    assert found_before[0][1] == [pin]  # the caller's lists are not changed


def test_a_count_a_summary_quotes_is_read_back_from_its_source() -> None:
    """s05 (SpecStory): "how many tests did the full bun test run execute" — the range's
    summary quotes ``Ran 73 tests across 10 files.`` (the observer reads test runs), the
    memory ranked 7th and the line is not among its best chunks: the summary points at
    the line, which is read verbatim from the range's events."""
    ranked = [_cand("m1", 5.0, "reviewed the task spec"),
              _cand("m7", 2.0, "output of `bun test`; full test suite run: Ran 73 tests "
                               "across 10 files.; tests fail (exit ?)"),
              _cand("m8", 1.0, "Ran 11 modules")]
    quoting = summary_counts(ranked, "test")
    assert [(c.memory.id, q) for c, q in quoting] == [("m7", ["73 test"])]
    output = ("bun test v1.2.10\n 56 pass\n 17 fail\nRan 73 tests across 10 files. "
              "[20.34s]\n")
    events = [Event("e1", "alice", "t", "2025-04-30T17:43:00Z", "tool", "tool_result", output,
                    index=4),
              Event("e2", "alice", "t", "2025-04-30T17:44:00Z", "assistant", "message",
                    "173 tests before the split\n73 tests ran; 17 failed.", index=5)]
    lines = lines_quoting(events, ["73 test"])
    assert [(p.event_id, p.text) for p in lines] == [
        ("e1", "Ran 73 tests across 10 files. [20.34s]"), ("e2", "73 tests ran; 17 failed.")]
    assert output[lines[0].offset:lines[0].offset + len(lines[0].text)] == lines[0].text
    assert events[1].content[lines[1].offset:] == lines[1].text  # not the "173 tests" line

"""query_api.recall.sources: a question for a typed value also cuts the top chunks of the
ranked memories after the followed ones — only chunks holding a value of the asked kind
(real sessions a03 ``slowapi==0.1.9``, a07 ``Aider v0.83.1``: their memories ranked 8th
and 9th, their lines score first once cut)."""

from __future__ import annotations

from breadcrumb.query_api.recall.passages import Passage
from breadcrumb.query_api.recall.rank import Candidate
from breadcrumb.query_api.recall.sources import PRECISE_MEMORIES, near_memories, with_near
from breadcrumb.topics.records import Observation, SourceRange


def _cand(mid: str, score: float) -> Candidate:
    memory = Observation(id=mid, user_id="alice", project_id=None, summary=mid,
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
                    frozenset({"version"}))
    assert [(c.memory.id, ps) for c, ps in out] == [("m1", [pin]), ("m8", [pin])]
    assert found_before[0][1] == [pin]  # the caller's lists are not changed

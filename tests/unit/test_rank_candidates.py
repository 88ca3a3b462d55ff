"""query_api.recall.rank.rank_candidates when no candidate has a dense or lexical score of its
own: every memory the vector searches named is missing from SQL (written to the index
first, its transaction not committed yet) and the passage search found these ones. It
answered a recall with a 500 (float division by zero) during a derivation burst."""

from __future__ import annotations

from breadcrumb.processors.lexical import query_terms
from breadcrumb.query_api.recall.question import Query, analyze_query
from breadcrumb.query_api.recall.rank import ScoreWeights, rank_candidates
from breadcrumb.topics.records import Observation, SourceRange


def memory(mid: str, created: str) -> Observation:
    return Observation(id=mid, user_id="u", project_id="p", summary=f"summary {mid}",
                       source_range=SourceRange("t", 0, 1), tags=(), query_hints=(),
                       retrieve_when="", importance=0.5, created_at=created)


def test_memories_found_only_by_their_passages_are_ranked_by_them() -> None:
    text = "which port does the db use"
    query = Query(text, analyze_query(text), query_terms(text), [0.0] * 4)
    memories = [memory("a", "2026-01-01T00:00:00Z"), memory("b", "2026-01-02T00:00:00Z")]
    # the dense / sparse hits were of other (unstored) memories: no scores for these two
    ranked = rank_candidates(memories, {"x": 0.9}, {"y": 3.0}, {"a": 1.0, "b": 0.25},
                             query, ScoreWeights())
    assert [c.memory.id for c in ranked] == ["a", "b"]
    assert all(c.parts["vector"] == 0 and c.parts["keyword"] == 0 for c in ranked)
    assert ranked[0].parts["passage"] > ranked[1].parts["passage"]


def test_no_scores_at_all_still_ranks() -> None:
    text = "what is the redis image now"
    query = Query(text, analyze_query(text), query_terms(text), [0.0] * 4)
    ranked = rank_candidates([memory("a", "2026-01-01T00:00:00Z")], {}, {}, {}, query,
                             ScoreWeights())
    assert [c.memory.id for c in ranked] == ["a"]

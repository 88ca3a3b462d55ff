"""Retrieve's ranking of candidate memories: the weights, the tag / value matches and the
stale and time parts (``final = vector + keyword + tag + importance + recency -
stale_penalty + passage``; see :class:`ScoreWeights`). The candidate record is a value
(:class:`.stages.Candidate`); :func:`memory_view` (Respond) and :func:`ratio` (Recall)
are shared with the later stages."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from breadcrumb.processors.lexical import lexical_terms
from breadcrumb.processors.text_cache import text_cache
from breadcrumb.query_api.recall.as_of import parse_ts
from breadcrumb.query_api.recall.question import Query
from breadcrumb.query_api.recall.stages import Candidate
from breadcrumb.topics.records import Observation

_EXACT_LOOKING = re.compile(r"[:=/@\\^$*]|\d")


@dataclass(frozen=True, slots=True)
class ScoreWeights:
    """``final = vector + keyword + tag + importance + recency - stale_penalty + passage``.

    ``vector_span``: cosine distance below the best candidate that maps to 0.
    ``temporal_boost``: recency multiplier when the question asks for the newest or
    the first value ("current", "now", "最初", ...).
    ``passage``: weight of the memory's best source passage in the direct passage search
    (its share of the best passage's fused score; score part ``passage``).
    """

    vector: float = 1.0
    keyword: float = 0.6
    tag: float = 0.2
    importance: float = 0.1
    recency: float = 0.1
    stale_penalty: float = 0.5
    recency_half_life_days: float = 30.0
    vector_span: float = 0.12
    temporal_boost: float = 4.0
    passage: float = 1.0


class TagMatch:
    """Query terms among the tags, the asked-for value kinds, and an exact value named: of
    one question, its term sets built once for all candidates."""

    __slots__ = ("content", "size", "kinds", "failure", "value_terms")

    def __init__(self, query: Query) -> None:
        content = [t for t, w in query.terms.items() if w >= 1.0]
        self.content, self.size = frozenset(content), len(content)
        self.kinds, self.failure = query.intent.kinds, query.intent.failure
        self.value_terms = frozenset(t for t in content if len(t) > 2)

    def __call__(self, memory: Observation) -> float:
        overlap = len(_tag_terms(memory.tags) & self.content) / self.size if self.size else 0.0
        kinds = memory.metadata.get("value_kinds") or ()
        kind_hit = 0.0 if self.kinds.isdisjoint(kinds) else 1.0
        # a question about a failure prefers the range that holds the failure, not the request
        fail_hit = 0.0
        if self.failure and ("error" in memory.tags or "error" in set(kinds)):
            fail_hit = 1.0
        return overlap + kind_hit + fail_hit + self.value_hit(memory)

    def value_hit(self, memory: Observation) -> float:
        """1.0 when an exact-looking hint (``redis:7.2``) holds a content term of the query."""
        if not self.kinds:
            return 0.0
        hit = any(not self.value_terms.isdisjoint(t) for t in _exact_hint_terms(memory.query_hints))
        return 1.0 if hit else 0.0


def value_hit(memory: Observation, query: Query) -> float:
    """1.0 when an exact-looking hint (``redis:7.2``) holds a content term of the query."""
    return TagMatch(query).value_hit(memory)


@lru_cache(maxsize=32768)
def _tag_terms(tags: tuple[str, ...]) -> frozenset[str]:
    return term_set(" ".join(tags))


@lru_cache(maxsize=8192)  # a memory's hints: 5.5 KB on the store-cost mix
def _exact_hint_terms(hints: tuple[str, ...]) -> tuple[frozenset[str], ...]:
    """The terms of each exact-looking hint (pure, so cached across recalls)."""
    return tuple(term_set(h) for h in hints if len(h) < 200 and _EXACT_LOOKING.search(h))


@text_cache(32768)
def term_set(text: str) -> frozenset[str]:
    """Distinct lexical terms of a tag line or hint; pure, so cached across recalls."""
    return frozenset(lexical_terms(text))


def memory_view(cand: Candidate) -> dict[str, Any]:
    """A memory as the contract shows it, with its score and score parts."""
    m = cand.memory
    try:  # what to_dict() gives without facts and user_id, metadata copied (JSON values)
        metadata = _json_copy(m.metadata)
    except _NotJson:  # anything else: the generic dataclass copy
        data = m.to_dict()
        data.pop("facts", None)
        data.pop("user_id", None)
    else:
        r = m.source_range
        data = {
            "id": m.id, "project_id": m.project_id, "summary": m.summary,
            "source_range": {"thread_id": r.thread_id, "start_index": r.start_index,
                             "end_index": r.end_index},
            "tags": list(m.tags), "query_hints": list(m.query_hints),
            "retrieve_when": m.retrieve_when, "importance": m.importance,
            "created_at": m.created_at, "kind": m.kind, "status": m.status, "tier": m.tier,
            "supersedes_memory_id": m.supersedes_memory_id, "metadata": metadata,
        }
    data["score"] = cand.score
    data["score_parts"] = cand.parts
    return data


class _NotJson(Exception):
    """A value :func:`_json_copy` does not copy the way ``dataclasses.asdict`` would."""


_ATOMS = (str, int, float, bool, type(None))


def _json_copy(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dict / list of str, number, bool, None), as
    ``asdict`` makes it; raises :class:`_NotJson` on any other type."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {_json_copy(k): _json_copy(v) for k, v in value.items()}
    if kind is list:
        return [_json_copy(v) for v in value]
    raise _NotJson(kind.__name__)


def rank_candidates(
    memories: list[Observation], dense: dict[str, float], sparse: dict[str, float],
    lead: dict[str, float], query: Query, w: ScoreWeights,
) -> list[Candidate]:
    """The candidates with their score parts, best first (ties: memory id).

    ``dense`` / ``sparse``: memory id -> channel score; ``lead``: memory id -> its best
    passage's share of the best (passage search)."""
    d_hi = max(dense.values(), default=0.0)
    s_hi = max(sparse.values(), default=0.0)
    base = {m.id: (_vector(dense.get(m.id), d_hi, w), ratio(sparse.get(m.id), s_hi))
            for m in memories}
    if query.intent.temporal:  # "first"/"current": versions of one fact match alike
        for m in memories:  # (supersession links); then time picks the version
            for v in (m.metadata.get("superseded_facts") or {}).values():
                newer = str(v.get("superseded_by")) if isinstance(v, dict) else ""
                if newer in base:
                    base[m.id] = base[newer] = max(base[m.id], base[newer], key=sum)
    times = {m.id: _epoch(m.created_at) for m in memories}
    best = max((sum(v) for v in base.values()), default=0.0)  # once, not per candidate
    recency = _recency(times, query, w)
    tag = TagMatch(query)
    out = []
    for memory in memories:
        vector, keyword = base[memory.id]
        # best is 0 when no candidate has a dense or lexical score of its own: those hits'
        # memories are not stored (yet) and the passage search found these ones
        relevance = (vector + keyword) / best if best > 0 else 0.0
        parts = {
            "vector": round(w.vector * vector, 6),
            "keyword": round(w.keyword * keyword, 6),
            "tag": round(w.tag * tag(memory), 6),
            "importance": round(w.importance * memory.importance, 6),
            "recency": round(w.recency * recency(memory.id, relevance), 6),
            "stale_penalty": round(w.stale_penalty * stale(memory.status, query), 6),
            "passage": round(w.passage * lead.get(memory.id, 0.0), 6),
        }
        score = parts["vector"] + parts["keyword"] + parts["tag"] + parts["importance"]
        score += parts["recency"] - parts["stale_penalty"] + parts["passage"]
        out.append(Candidate(memory, round(score, 6), parts))
    out.sort(key=lambda c: (-c.score, c.memory.id))
    return out


def _vector(cosine: float | None, best: float, w: ScoreWeights) -> float:
    if cosine is None:
        return 0.0
    return max(0.0, 1.0 - (best - cosine) / w.vector_span)


def _recency(times: dict[str, float], query: Query, w: ScoreWeights
             ) -> Callable[[str, float], float]:
    """``(memory id, relevance) -> recency``: decay from the newest candidate; a
    "current"/"first" question ranks by time."""
    newest, oldest = max(times.values(), default=0.0), min(times.values(), default=0.0)

    def recency(mid: str, relevance: float) -> float:
        if query.intent.temporal is None or newest == oldest:
            age_days = (newest - times[mid]) / 86400
            return math.pow(0.5, age_days / w.recency_half_life_days)
        position = (times[mid] - oldest) / (newest - oldest)
        if query.intent.temporal == "oldest":
            position = 1.0 - position
        return w.temporal_boost * position * max(relevance, 0.0)

    return recency


@lru_cache(maxsize=32768)
def _epoch(created_at: str) -> float:
    return parse_ts(created_at).timestamp()


def ratio(value: float | None, best: float) -> float:
    return (value or 0.0) / best if best > 0 else 0.0


def stale(status: str, query: Query) -> float:
    """1 for a memory that is not active; a superseded one is what "the first/previous
    value" questions ask for, so for those it is not stale."""
    if status == "active" or (status == "superseded" and query.intent.temporal == "oldest"):
        return 0.0
    return 1.0

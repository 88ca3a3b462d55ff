"""Scoring of recall candidates: the weights, the candidate record, the tag / value
matches and the stale and time parts (``final = vector + keyword + tag + importance +
recency - stale_penalty + passage``; see :class:`ScoreWeights`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from breadcrumb.processors.decide import QueryIntent
from breadcrumb.processors.lexical import lexical_terms
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


@dataclass(frozen=True, slots=True)
class Candidate:
    """A retrieved memory with the parts of its score."""

    memory: Observation
    score: float
    parts: dict[str, float]


@dataclass(frozen=True, slots=True)
class Query:
    """A question, analysed once: intent, weighted lexical terms, dense vector."""

    text: str
    intent: QueryIntent
    terms: dict[str, float]
    dense: list[float]


def tag_match(memory: Observation, query: Query) -> float:
    """Query terms among the tags, the asked-for value kinds, and an exact value named."""
    tag_terms = term_set(" ".join(memory.tags))
    content = [t for t, w in query.terms.items() if w >= 1.0]
    overlap = len(tag_terms & set(content)) / len(content) if content else 0.0
    kinds = set(memory.metadata.get("value_kinds") or ())
    kind_hit = 1.0 if query.intent.kinds & kinds else 0.0
    # a question about a failure prefers the range that holds the failure, not the request
    fail_hit = 1.0 if query.intent.failure and ("error" in memory.tags or "error" in kinds) else 0.0
    return overlap + kind_hit + fail_hit + value_hit(memory, query)


def value_hit(memory: Observation, query: Query) -> float:
    """1.0 when an exact-looking hint (``redis:7.2``) holds a content term of the query."""
    if not query.intent.kinds:
        return 0.0
    content = {t for t, w in query.terms.items() if w >= 1.0 and len(t) > 2}
    for hint in memory.query_hints:
        if len(hint) < 200 and _EXACT_LOOKING.search(hint) and content & term_set(hint):
            return 1.0
    return 0.0


@lru_cache(maxsize=32768)
def term_set(text: str) -> frozenset[str]:
    """Distinct lexical terms of a tag line or hint; pure, so cached across recalls."""
    return frozenset(lexical_terms(text))


def memory_view(cand: Candidate) -> dict[str, Any]:
    """A memory as the contract shows it, with its score and score parts."""
    data = cand.memory.to_dict()
    data.pop("facts", None)
    data.pop("user_id", None)
    data["score"] = cand.score
    data["score_parts"] = cand.parts
    return data




def ratio(value: float | None, best: float) -> float:
    return (value or 0.0) / best if best > 0 else 0.0


def parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def stale(status: str, query: Query) -> float:
    """1 for a memory that is not active; a superseded one is what "the first/previous
    value" questions ask for, so for those it is not stale."""
    if status == "active" or (status == "superseded" and query.intent.temporal == "oldest"):
        return 0.0
    return 1.0

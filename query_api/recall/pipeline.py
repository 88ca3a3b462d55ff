"""Recall as a pipeline of named stages: analyze → retrieve → decide → recall → extract
→ respond.

Each stage is a function from one typed value to the next (:mod:`.stages`), in a module
named after it, and each is timed by name (the response's ``timings_ms``). The modules
import in this order (pyproject.toml's layers contract): a stage never imports a later
one, and what several stages share sits below them all:

==========  ==============================  ==========================================
stage       module                          value out
==========  ==============================  ==========================================
analyze     :mod:`.query`                   :class:`~.question.Query`
retrieve    :mod:`.retrieve`                :class:`~.stages.Retrieved`
decide      :mod:`.decide`                  :class:`~.stages.Decision`
recall      :mod:`.sources`                 :class:`~.stages.Recalled`
extract     :mod:`.extract`                 :class:`~.stages.Extracted`
respond     :mod:`.respond`                 the RecallResponse (contract)
==========  ==============================  ==========================================

Recall levels: 0 summaries only; 1 the chunk index of the chosen memories; 2 the raw
events of their source ranges; 3 an optional LLM that may only *point at* lines (quotes
not found verbatim are dropped). Evidence text is always a slice of stored content; a
summary is never the answer to an exact-value question.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

from breadcrumb.processors.text_cache import text_cache
from breadcrumb.query_api.models import RecallRequest, RecallSourceRequest
from breadcrumb.query_api.recall.as_of import effective_as_of
from breadcrumb.query_api.recall.budget import fitted
from breadcrumb.query_api.recall.chunk_rows import chunk_rows_of
from breadcrumb.query_api.recall.decide import SUMMARY_OK, Classifier, decide_stage
from breadcrumb.query_api.recall.explain import explain
from breadcrumb.query_api.recall.extract import Extractor
from breadcrumb.query_api.recall.extract.cut import Quoter, extract_lines
from breadcrumb.query_api.recall.extract.learned.model import Ranker
from breadcrumb.query_api.recall.extract.learned.relevance import RelevanceModel
from breadcrumb.query_api.recall.passages import evidence_record
from breadcrumb.query_api.recall.query import analyze
from breadcrumb.query_api.recall.rank import ScoreWeights
from breadcrumb.query_api.recall.respond import Responder
from breadcrumb.query_api.recall.retrieve import Retriever
from breadcrumb.query_api.recall.sources import Sources
from breadcrumb.query_api.recall.stages import Recalled, StageTimings
from breadcrumb.query_api.recall.usage import UsageWriter
from breadcrumb.stores.ports import (
    Embedder,
    MemoryStore,
    OpenWindowStates,
    RawEventStore,
    VectorIndex,
)


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
        ranker: Ranker | None = None,
        learned_lines: bool = False,
        states: OpenWindowStates | None = None,
        relevance: RelevanceModel | None = None,
    ) -> None:
        self.index = index
        self.memories = memories
        self.raw = raw
        self.embedder = embedder
        self.weights = weights
        self.clock = clock
        self.classifier = classifier
        self.quoter = quoter
        self._ranker, self._learned_lines = ranker, learned_lines  # for variant()
        self._states, self._relevance = states, relevance
        # token counts of lines and summaries, cached: pure, and a pool's lines recur
        self.count_tokens = text_cache(8192, max_chars=4096)(embedder.count_tokens)
        self.errors: Counter[str] = Counter()  # classifier / quoter failures, never hidden
        # open windows (not yet memories) are searched too, where the store keeps them
        # (``states``); chunk texts come from the store where it keeps its rows (not payloads)
        rows = chunk_rows_of(memories)
        self.retriever = Retriever(index, rows, memories, weights)
        self.sources = Sources(index, raw, rows, states)
        self.extractor = Extractor(memories, raw, self.count_tokens, embedder.count_tokens,
                                   quoter, self.errors, ranker, embedder.name,
                                   learned_lines, relevance)
        # usage accounting is written off the answer's path, coalesced (.usage)
        self._usage = UsageWriter(memories, self.errors)
        self.responder = Responder(memories, raw, self.count_tokens, self._usage, clock)

    def variant(self, classifier: Classifier | None = None,
                quoter: Quoter | None = None) -> RecallService:
        """The same service (stores, models, weights) with another classifier and quoter:
        ``variant()`` answers without an LLM (the evaluation reports both)."""
        other = RecallService(self.index, self.memories, self.raw, self.embedder,
                              self.weights, self.clock, classifier, quoter, self._ranker,
                              self._learned_lines, self._states, self._relevance)
        # one usage writer: what the variant records is flushed with this service's
        other._usage = self._usage
        other.responder = Responder(self.memories, self.raw, other.count_tokens, self._usage,
                                    self.clock)
        return other

    def flush_usage(self) -> None:
        """Wait until every recorded use is written (tests, shutdown)."""
        self._usage.flush()

    # ------------------------------------------------------------------ public
    def recall(self, req: RecallRequest) -> dict[str, Any]:
        """Answer a RecallRequest with a RecallResponse (contract), with ``timings_ms``."""
        timings = StageTimings()
        recalled = self._recalled(req, timings)
        extracted = self.extractor(recalled)
        reads = recalled.events.seconds if recalled.events is not None else 0.0
        timings.done("extract", moved=reads, to="recall")  # level-2 reads are Recall's
        response = self.responder(recalled.retrieved, recalled.decision, extracted)
        timings.done("respond")
        stage_ms = timings.report()
        response["latency_ms"] = stage_ms["total"]
        response["timings_ms"] = stage_ms
        if req.explain:  # after the timings: the explanation is not part of any stage
            response["explain"] = explain(recalled, extracted, self.count_tokens)
        return response

    def recalled(self, req: RecallRequest) -> Recalled:
        """The first four stages alone (analyze, retrieve, decide, recall): what Extract
        would be handed (the learned ranker's training rows are read from it)."""
        return self._recalled(req, StageTimings())

    def _recalled(self, req: RecallRequest, timings: StageTimings) -> Recalled:
        query = analyze(req.query, self.embedder)
        asked_at = self.clock()
        as_of = effective_as_of(req.as_of, asked_at)  # in the future: nothing to filter
        if req.now is None:  # relative periods ("yesterday") are anchored on the request
            req = req.model_copy(update={"now": asked_at})
        if query.intent.temporal == "oldest" and not req.include_superseded:
            req = req.model_copy(update={"include_superseded": True})  # history is asked for
        timings.done("analyze")
        retrieved = self.retriever(req, query, as_of)
        timings.done("retrieve")
        decision = decide_stage(query, req.mode, self.classifier, self.errors)
        retrieved = fitted(retrieved, decision.classification == SUMMARY_OK, self.count_tokens)
        timings.done("decide")
        recalled = self.sources.recall(retrieved, decision)
        timings.done("recall")
        return recalled

    def recall_source(self, req: RecallSourceRequest) -> dict[str, Any]:
        """The article's recallMemorySource: verbatim lines of one range for a query."""
        events = self.raw.get_range(
            req.user_id, req.source_thread_id, req.source_start_index, req.source_end_index
        )
        cut = extract_lines(req.query, events, req.max_tokens, self.count_tokens)
        return evidence_record(None, req.source_thread_id, req.source_start_index,
                               req.source_end_index, cut,
                               f"{len(cut.lines)} line(s) matching the query")

"""The three methods, asked the same question over the same ingested events.

* **Breadcrumb**: the full pipeline, ``runtime.recall.recall`` (Retrieve → Decide →
  Recall → Extract); the answer text is the verbatim evidence.
* **Summary compact**: the same memories with no way back to the source
  (``mode="summary"``); the answer text is the summaries.
* **Raw only**: search over the raw events' line-aware chunks (same embedder, same
  lexical sparse channel, fused like the memory rerank), top chunks packed into the
  same token budget; the answer text is the raw chunk text.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from breadcrumb.eval.metrics import Item, Span
from breadcrumb.processors.lexical import sparse_query
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.query_api.recall.as_of import said_by
from breadcrumb.query_api.recall.chunk_rows import chunk_rows_of
from breadcrumb.query_api.recall.raw_reads import events_by_id
from breadcrumb.stores.ports import Hit, SearchFilter

BREADCRUMB = "breadcrumb"
#: Breadcrumb with the configured LLM (``LLM_*``): Decide's classifier where no rule
#: matches, and level 3 (the model chooses among the ranked lines); asked only where a
#: model is configured, beside Breadcrumb without it
BREADCRUMB_LLM = "breadcrumb_llm"
SUMMARY = "summary_compact"
RAW = "raw_only"
METHODS: tuple[str, ...] = (RAW, SUMMARY, BREADCRUMB, BREADCRUMB_LLM)
BREADCRUMBS = frozenset({BREADCRUMB, BREADCRUMB_LLM})
LABELS = {RAW: "Raw only", SUMMARY: "Summary compact", BREADCRUMB: "Breadcrumb",
          BREADCRUMB_LLM: "Breadcrumb + LLM"}


@dataclass(frozen=True, slots=True)
class Query:
    """What every method is asked."""

    user_id: str
    text: str
    k: int = 5
    max_tokens: int = 800
    mode: str = "auto"
    #: only what was said at or before this time counts (every method obeys it) ...
    as_of: datetime | None = None
    #: ... and relative periods are anchored to this one (default ``as_of``)
    now: datetime | None = None


@dataclass(slots=True)
class Answer:
    """A method's answer: ranked memories (or raw items), source items, returned text."""

    method: str
    memories: list[Item]
    sources: list[Item]
    text: str
    tokens: int
    latency_ms: float
    classification: str | None = None
    decision_reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _memory_item(user_id: str, mem: dict[str, Any]) -> Item:
    rng = mem["source_range"]
    return Item(Span(user_id, rng["thread_id"], rng["start_index"], rng["end_index"]),
                mem["summary"], (), mem["id"], float(mem["score"]), dict(mem["score_parts"]),
                f"{mem['status']}/{mem['tier']}")


def _evidence_item(user_id: str, ev: dict[str, Any]) -> Item:
    span = Span(user_id, ev["source_thread_id"], ev["source_start_index"],
                ev["source_end_index"])
    return Item(span, ev["extracted_text"], tuple(ev["matched_event_ids"]), ev["memory_id"],
                reason=ev["reason"])


def ask_recall(runtime: Any, q: Query, method: str, service: Any = None) -> Answer:
    """Breadcrumb (``mode`` as asked) or Summary compact (``mode="summary"``), asked of
    ``service`` (a ``RecallService``; default the runtime's)."""
    mode = "summary" if method == SUMMARY else q.mode
    req = RecallRequest(user_id=q.user_id, query=q.text, k=q.k, max_tokens=q.max_tokens,
                        mode=mode, as_of=q.as_of, now=q.now or q.as_of)
    started = time.perf_counter()
    resp = (service or runtime.recall).recall(req)
    latency = (time.perf_counter() - started) * 1000
    memories = [_memory_item(q.user_id, m) for m in resp["memories"]]
    sources = [_evidence_item(q.user_id, e) for e in resp["evidence"]]
    if method == SUMMARY:
        sources = []  # no way back to the source
        text = "\n".join(m.text for m in memories)
    else:
        text = "\n".join(s.text for s in sources)
    return Answer(method, memories, sources, text, int(resp["token_cost"]), latency,
                  resp["classification"], resp["decision_reason"])


@dataclass(frozen=True, slots=True)
class RawSearch:
    """Raw-only baseline over the chunk index (every raw event, line-aware chunks)."""

    runtime: Any
    lexical: bool = True
    pool: int = 50

    def __call__(self, q: Query) -> Answer:
        """Top chunks (dense + optional lexical, min-max fused) packed into the budget."""
        started = time.perf_counter()
        flt = SearchFilter(user_id=q.user_id, statuses=None)
        index = self.runtime.index
        dense = index.search_chunks(flt, self.pool,
                                    dense=self.runtime.embedder.embed_query(q.text))
        sparse = index.search_chunks(flt, self.pool, sparse=sparse_query(q.text)) \
            if self.lexical else []
        dense, sparse = (with_texts(self.runtime, q.user_id, hits) for hits in (dense, sparse))
        ranked = fuse(dense, sparse, self.runtime.settings.weight_vector,
                      self.runtime.settings.weight_keyword)
        if q.as_of is not None:  # the same history Breadcrumb is allowed to see
            events = events_by_id(self.runtime.raw, q.user_id,
                                  [eid for i in ranked for eid in i.event_ids])
            ranked = [i for i in ranked if all(
                eid in events and said_by(events[eid].ts, q.as_of) for eid in i.event_ids)]
        items, tokens = pack(ranked, q.max_tokens, self.runtime.embedder.count_tokens)
        latency = (time.perf_counter() - started) * 1000
        return Answer(RAW, items, items, "\n".join(i.text for i in items), tokens, latency)


def with_texts(runtime: Any, user_id: str, hits: list[Hit]) -> list[Hit]:
    """The hits with their texts: the embedded index's chunk points carry none (issue 49),
    the store's chunk rows give it, as they do to recall; a hit with neither is left out
    (as recall leaves it out)."""
    missing = [h.id for h in hits if "text" not in h.payload]
    rows = chunk_rows_of(runtime.memories) if missing else None
    found = rows(user_id, missing) if rows is not None else {}
    return [h if "text" in h.payload else Hit(h.id, h.score, {**h.payload,
                                                            "text": found[h.id].text})
            for h in hits if "text" in h.payload or h.id in found]


def fuse(dense: list[Hit], sparse: list[Hit], w_vector: float, w_keyword: float) -> list[Item]:
    """Rank chunk hits as the memory rerank does: min-max dense + keyword / max keyword."""
    d = {h.id: h.score for h in dense}
    s = {h.id: h.score for h in sparse}
    payloads = {h.id: h.payload for h in [*dense, *sparse]}
    d_lo, d_hi = (min(d.values()), max(d.values())) if d else (0.0, 1.0)
    s_hi = max(s.values(), default=0.0)
    items = []
    for cid, payload in payloads.items():
        vector = 0.0 if cid not in d else (1.0 if d_hi <= d_lo else (d[cid] - d_lo) / (d_hi - d_lo))
        keyword = s.get(cid, 0.0) / s_hi if s_hi > 0 else 0.0
        parts = {"vector": round(w_vector * vector, 6), "keyword": round(w_keyword * keyword, 6)}
        idx = int(payload["event_index"])
        span = Span(str(payload["user_id"]), str(payload["thread_id"]), idx, idx)
        items.append(Item(span, str(payload["text"]), (str(payload["event_id"]),),
                          score=round(sum(parts.values()), 6), score_parts=parts,
                          reason="raw chunk"))
    items.sort(key=lambda i: (-i.score, i.span.thread_id, i.span.start))
    return items


def pack(ranked: list[Item], max_tokens: int, count: Callable[[str], int]
         ) -> tuple[list[Item], int]:
    """Ranked items that fit the token budget, in rank order (a too-big item is skipped)."""
    chosen: list[Item] = []
    used = 0
    for item in ranked:
        cost = count(item.text)
        if used + cost > max_tokens:
            continue
        chosen.append(item)
        used += cost
    return chosen, used

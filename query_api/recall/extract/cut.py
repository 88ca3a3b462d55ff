"""The word-exact cut: only the lines that answer, verbatim, within the token budget.

Lines are scored by :func:`.scoring.score_exact`; only lines within
:data:`RELATIVE_THRESHOLD` of the best line are kept, at most ``max_lines`` of them,
within ``max_tokens``. Per followed range its raw events (read through Recall's
:class:`~query_api.recall.raw_reads.RangeReader`) are cut, the lines of its top chunks
winning ties: level 1 when every line cut is one of them, else level 2, or level 3 where
a quoter (an LLM that may only *point at* lines: quotes not found verbatim are dropped)
names the lines. The question's term weights are one pool for all the ranges a recall
cuts (:func:`pool_terms`).
Nothing is ever rewritten: every line is a slice of stored content.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from breadcrumb.processors.calls import calls_of
from breadcrumb.query_api.recall.extract.superseded import drop_superseded, holds_value
from breadcrumb.query_api.recall.lines.edits import removed_lines
from breadcrumb.query_api.recall.lines.scoring import exact_weights, score_exact
from breadcrumb.query_api.recall.passages import (
    Extract,
    Line,
    Passage,
    evidence_record,
    passages_from_events,
    split_lines,
)
from breadcrumb.query_api.recall.question import Query, QueryIntent
from breadcrumb.query_api.recall.raw_reads import RangeReader
from breadcrumb.query_api.recall.stages import Recalled
from breadcrumb.topics.records import Event, Observation

log = logging.getLogger(__name__)

#: (query, numbered source lines) -> quotes; an LLM behind a port (level 3).
Quoter = Callable[[str, str], Sequence[str]]
RELATIVE_THRESHOLD = 0.5
#: what a line costs beyond its own count once joined under another line: a text's
#: count leaves out its first word's leading space, which a joined line pays
JOIN_TOKENS = 1
#: A line of at least this many tokens that shares this share of its word 4-grams with a
#: long line already packed is a near repeat of it (see :class:`NearRepeats`).
NEAR_MIN_TOKENS = 60
NEAR_SHARE = 0.6


def extract_lines(
    query: str,
    events: Sequence[Event | Passage],
    max_tokens: int,
    count_tokens: Callable[[str], int],
    max_lines: int = 8,
    intent: QueryIntent | None = None,
    calls: Mapping[str, str] | None = None,
    prefer: Collection[tuple[str, int]] = (),
    terms: dict[str, float] | None = None,
) -> Extract:
    """The best lines (within the relative threshold) that fit ``max_tokens``, in source
    order. ``calls``: result event id -> the call it answers (:mod:`processors.calls`);
    ``prefer``: (event id, start) of lines that win ties (the range's top chunks');
    ``terms``: question term weights (:func:`.scoring.exact_weights`; default: over
    ``events``)."""
    scored = score_exact(query, _as_passages(events), intent, calls=calls, terms=terms)
    if not scored:
        return Extract((), 0)
    best = max(line.score for line in scored)
    ranked = sorted(
        (ln for ln in scored if ln.score >= best * RELATIVE_THRESHOLD),
        key=lambda ln: (-ln.score, (ln.event_id, ln.start) not in prefer, ln.event_index,
                        ln.start),
    )
    chosen: list[Line] = []
    # one copy of a line: the same position, or the same line said again (an output
    # the next turn repeats); the same position is always the same text
    said: set[str] = set()
    used = 0
    for line in ranked:
        # as counted in the joined text (the response's ``token_cost``): a join each
        cost = count_tokens(line.text) + (JOIN_TOKENS if chosen else 0)
        if len(chosen) >= max_lines or line.text in said:
            continue
        if used + cost > max_tokens:
            continue
        chosen.append(line)
        said.add(line.text)
        used += cost
    chosen.sort(key=lambda ln: (ln.event_index, ln.start))
    cut = Extract.joined(chosen, count_tokens, best)
    while cut.tokens > max_tokens and cut.lines:  # a tokenizer does not add up over joins
        worst = min(cut.lines, key=lambda ln: ln.score)
        cut = Extract.joined((ln for ln in cut.lines if ln is not worst), count_tokens, best)
    return cut


def _without(cut: Extract, was: frozenset[str], count: Callable[[str], int]) -> Extract:
    """``cut`` without its lines (other than an edit's own ``-`` lines) that an edit of
    the range took out (:func:`.edits.removed_lines`)."""
    if not was:
        return cut
    kept = [ln for ln in cut.lines if ln.text.startswith("-") or ln.text.strip() not in was]
    return cut if len(kept) == len(cut.lines) else Extract.joined(kept, count, cut.best_score)


def _as_passages(items: Sequence[Event | Passage]) -> list[Passage]:
    return [i if isinstance(i, Passage) else passages_from_events([i])[0] for i in items]


def quoted_lines(quotes: Sequence[str], events: Sequence[Event], score: float = 1.0) -> list[Line]:
    """Lines of ``events`` holding an LLM's quotes verbatim; a quote found nowhere is dropped.

    The returned text is always the stored line, never the model's string.
    """
    out: list[Line] = []
    for quote in (q.strip() for q in quotes):
        if not quote:
            continue
        for passage in passages_from_events(events):
            hit = next(((s, e, t) for s, e, t in split_lines(passage) if quote in t), None)
            if hit is not None:
                out.append(Line(passage.event_id, passage.event_index, *hit, score))
                break
    return out


def best_lines(cuts: Sequence[Extract], budget: int, count: Callable[[str], int]
                ) -> list[list[Line]]:
    """Each cut's lines that get the shared ``budget``: the best lines of all cuts first
    (ties: the earlier cut, then source order), each costed as joined into its cut's text;
    a line said verbatim in an earlier pick is not packed again, nor a long line that
    mostly repeats a long line already picked (:class:`NearRepeats`). Source order kept."""
    ranked = sorted(((ln.score, c, ln) for c, cut in enumerate(cuts) for ln in cut.lines),
                    key=lambda x: (-x[0], x[1], x[2].event_index, x[2].start))
    kept: list[list[Line]] = [[] for _ in cuts]
    said: set[str] = set()
    near = NearRepeats()
    used = 0
    for _score, c, line in ranked:
        if line.text in said:
            continue
        tokens = count(line.text)
        cost = tokens + (JOIN_TOKENS if kept[c] else 0)
        grams = near.grams(line.text, tokens)
        if used + cost > budget or near.repeats(grams):
            continue
        kept[c].append(line)
        near.keep(grams)
        said.add(line.text)
        used += cost
    for lines in kept:
        lines.sort(key=lambda ln: (ln.event_index, ln.start))
    return kept


def pool_terms(recalled: Recalled) -> dict[str, float]:
    """The question's term weights over every line this recall cuts: the followed ranges'
    events and the passage search's passages (:func:`.scoring.exact_weights`)."""
    assert recalled.events is not None  # a followed recall always has its reader
    passages = [p for c in recalled.hops for p in passages_from_events(
        recalled.events.events(c.memory))]
    passages += [p for _c, found in recalled.found for p in found]
    return exact_weights(recalled.retrieved.query.text,
                         [t for p in passages for _s, _e, t in split_lines(p)])


class NearRepeats:
    """Long lines picked so far, by their word 4-grams: a long line (at least
    :data:`NEAR_MIN_TOKENS`) most of whose 4-grams (:data:`NEAR_SHARE` of the shorter
    line's) a picked long line holds says that line again with a few words changed —
    the command, its ``[INFO] Adding new task with prompt: "…"`` echo, the same command
    with ``--tag=dev`` — and is not packed again (s02: three 105-139 token echoes of one
    prompt filled the budget a 3-token ``Version: 0.37.1`` needed)."""

    def __init__(self) -> None:
        self._picked: list[frozenset[tuple[str, ...]]] = []

    @staticmethod
    def grams(text: str, tokens: int) -> frozenset[tuple[str, ...]]:
        """The word 4-grams of a long line (none for a line under the length)."""
        if tokens < NEAR_MIN_TOKENS:
            return frozenset()
        words = text.lower().split()
        return frozenset(zip(words, words[1:], words[2:], words[3:], strict=False))

    def repeats(self, grams: frozenset[tuple[str, ...]]) -> bool:
        """Whether a line of these 4-grams mostly repeats a long line kept before."""
        return bool(grams) and any(
            len(grams & other) >= NEAR_SHARE * min(len(grams), len(other))
            for other in self._picked)

    def keep(self, grams: frozenset[tuple[str, ...]]) -> None:
        """A line of these 4-grams was packed (a short line's are empty: not kept)."""
        if grams:
            self._picked.append(grams)


@dataclass(frozen=True, slots=True)
class CutEvidence:
    """The word-exact cut's evidence records and level; ``history``: records of the
    ranges whose every cut line held a superseded value (naming them in
    ``superseded_values``), and their level. With nothing else left they are the exact
    lines, marked as no longer current, rather than lines chosen by meaning alone."""

    evidence: list[dict[str, Any]]
    level: int
    history: list[dict[str, Any]] = field(default_factory=list)
    history_level: int = 0
    #: the lines of ``evidence`` with their scores, and the memory of each
    lines: list[tuple[str, Line]] = field(default_factory=list)


class WordExactCut:
    """The word-exact cut of the followed ranges (several: multi-hop)."""

    def __init__(self, count: Callable[[str], int], quoter: Quoter | None,
                 errors: Counter[str]) -> None:
        self.count, self.quoter, self.errors = count, quoter, errors

    def __call__(self, recalled: Recalled) -> tuple[list[dict[str, Any]], int]:
        """Evidence records of the followed ranges, and the level reached."""
        cut = self.with_history(recalled)
        return cut.evidence, cut.level

    def with_history(self, recalled: Recalled) -> CutEvidence:
        """The evidence records and level, and the ranges whose every cut line held a
        superseded value (see :class:`CutEvidence`).

        Each followed range is cut on its own (its lines within the relative threshold
        of its best); the budget then goes to the best lines of all of them, by score,
        not range by range: the first range's weaker lines do not crowd out a better
        line of the next one."""
        req, query = recalled.retrieved.request, recalled.retrieved.query
        assert recalled.events is not None  # a followed recall always has its reader
        total = recalled.retrieved.evidence_budget  # what the listed summaries leave
        cuts: list[tuple[Observation, Extract, int, list[str]]] = []
        history: list[dict[str, Any]] = []
        history_level = history_tokens = 0
        terms = pool_terms(recalled)
        for cand in recalled.hops:
            whole, used = self._cut(query, cand.memory, total,
                                    recalled.cut_passages[cand.memory.id], recalled.events,
                                    terms)
            cut, stale = drop_superseded(whole, cand.memory, req.include_superseded,
                                         self.count, query.intent)
            if not cut.lines:
                if whole.lines and history_tokens + whole.tokens <= total:
                    _cut, stale = drop_superseded(whole, cand.memory, True, self.count)
                    history.append(self._record(recalled, cand.memory, whole, used, stale))
                    history_level = max(history_level, used)
                    history_tokens += whole.tokens
                continue
            cuts.append((cand.memory, cut, used, stale))
        cuts += self._found(recalled, max((c.best_score for _m, c, _u, _s in cuts), default=0.0),
                            terms)
        kept = best_lines([cut for _m, cut, _u, _s in cuts], total, self.count)
        evidence: list[dict[str, Any]] = []
        level = 0
        scored: list[tuple[str, Line]] = []
        for (memory, cut, used, stale), lines in zip(cuts, kept, strict=True):
            if not lines:
                continue
            scored += [(memory.id, ln) for ln in lines]
            cut = Extract.joined(lines, self.count, cut.best_score)
            level = max(level, used)
            evidence.append(self._record(recalled, memory, cut, used,
                                         [v for v in stale if holds_value(cut.text, v)]))
        return CutEvidence(evidence, level, history, history_level, scored)

    def _found(self, recalled: Recalled, best: float, terms: dict[str, float]
               ) -> list[tuple[Observation, Extract, int, list[str]]]:
        """Cuts of the direct passage search's best passages outside the followed ranges
        (level 1): only their lines within the relative threshold of the best line of all."""
        req, query = recalled.retrieved.request, recalled.retrieved.query
        total = recalled.retrieved.evidence_budget
        cuts = []
        for cand, passages in recalled.found:
            whole = extract_lines(query.text, passages, total, self.count, intent=query.intent,
                                  terms=terms)
            cut, stale = drop_superseded(whole, cand.memory, req.include_superseded, self.count,
                                         query.intent)
            if cut.lines:
                cuts.append((cand.memory, cut, 1, stale))
        floor = RELATIVE_THRESHOLD * max([best, *(c.best_score for _m, c, _u, _s in cuts)])
        kept = [(m, Extract.joined((ln for ln in c.lines if ln.score >= floor), self.count,
                                   c.best_score), u, s) for m, c, u, s in cuts]
        return [(m, c, u, s) for m, c, u, s in kept if c.lines]

    @staticmethod
    def _record(recalled: Recalled, memory: Observation, cut: Extract, used: int,
                stale: list[str]) -> dict[str, Any]:
        rng = memory.source_range
        reason = (f"{recalled.decision.reason}; level {used}; {len(cut.lines)} line(s), "
                  f"{cut.tokens} tokens")
        item = evidence_record(memory.id, rng.thread_id, rng.start_index, rng.end_index, cut,
                               reason)
        if stale:  # say which values are no longer current
            item["superseded_values"] = stale
        return item

    def _cut(self, query: Query, memory: Observation, budget: int, passages: list[Passage],
             reader: RangeReader, terms: dict[str, float]) -> tuple[Extract, int]:
        """The range's events cut by words, its top chunks' lines winning ties: level 1
        when every line cut is one of them, else level 2, or 3 where a quoter names the
        lines. The events are read either way (which call each output answers,
        :mod:`processors.calls`); scoring them all finds the line a chunk search ranked
        low (c03: the version line tied the command lines of the top chunks)."""
        events = reader.events(memory)
        calls = calls_of(events)
        # a line an edit of the range later took out, seen earlier (the file read before
        # the edit), is the old version: left out unless history is asked for
        was = frozenset() if query.intent.temporal == "oldest" else removed_lines(
            e.content for e in events if e.kind == "file_edit")
        # the lines of the range's top chunks (dense + lexical) win ties: the cut is by
        # words, the chunks were found by meaning too; all of the cut in them: level 1
        near = frozenset((p.event_id, start) for p in passages
                         for start, _end, _text in split_lines(p))
        if not events:  # nothing said by ``as_of``: the chunk lines, dated out later
            return _without(extract_lines(query.text, passages, budget, self.count,
                                          intent=query.intent, calls=calls, terms=terms),
                            was, self.count), 1
        cut = _without(extract_lines(query.text, events, budget, self.count,
                                     intent=query.intent, calls=calls, prefer=near,
                                     terms=terms), was, self.count)
        if cut.lines and all((ln.event_id, ln.start) in near for ln in cut.lines):
            return cut, 1
        if self.quoter is not None and events:
            quoted = self.quoted(query.text, events, cut, budget)
            if quoted is not None:
                return quoted, 3
        return cut, 2

    def quoted(self, query: str, events: list[Event], cut: Extract, budget: int
                ) -> Extract | None:
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
        kept: list[Line] = []
        used = 0
        for line in lines:
            cost = self.count(line.text) + (JOIN_TOKENS if kept else 0)
            if used + cost <= budget:
                kept.append(line)
                used += cost
        if not kept:
            return None
        kept.sort(key=lambda ln: (ln.event_index, ln.start))
        return Extract.joined(kept, self.count, cut.best_score)

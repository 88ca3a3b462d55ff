"""Lines by meaning as well as by words.

Every stored passage (an event, or a line group of a long event: the ``chunks``
index, see :mod:`processors.chunker`) already carries a dense vector from ingest; no
second embedding is made. The candidate passages come from two places, both searched
before this step: the followed ranges (Recall: the chosen memories' own chunks, dense +
lexical) and the direct passage search over the user's sources (Retrieve: same tenant /
project / thread / status filter as the memory search), so an answering turn is found
even where the memory ranking missed its range; such a line still names its range and
memory. Lines are scored by :func:`.scoring.line_pool` and packed into the token budget
by :func:`.pack.pack_pool`. Text stays verbatim: every line is a slice of stored content.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from breadcrumb.processors.asked import asks_anything, holds_asked
from breadcrumb.processors.lexical import with_verb_forms
from breadcrumb.processors.test_runs import counts
from breadcrumb.query_api.recall.extract.cut import JOIN_TOKENS
from breadcrumb.query_api.recall.extract.dated import dated_events
from breadcrumb.query_api.recall.extract.pack import pack_pool
from breadcrumb.query_api.recall.extract.superseded import drop_superseded
from breadcrumb.query_api.recall.lines.scoring import Scored, line_pool
from breadcrumb.query_api.recall.lines.shapes import MAX_LINE_CHARS
from breadcrumb.query_api.recall.passages import (
    Extract,
    Found,
    Line,
    Passage,
    evidence_record,
    merge,
)
from breadcrumb.query_api.recall.question import Query, QueryIntent, named_literal
from breadcrumb.query_api.recall.raw_reads import events_by_id
from breadcrumb.query_api.recall.stages import Recalled
from breadcrumb.stores.ports import MemoryStore, RawEventStore
from breadcrumb.topics.records import Observation


def joined_cost(count: Callable[[str], int]) -> Callable[[str], int]:
    """A line's cost inside a newline-joined evidence text (what ``token_cost`` counts)."""
    return lambda text: count(text) + JOIN_TOKENS


class LinesByMeaning:
    """Evidence from the followed ranges' chunks and the direct passage search."""

    def __init__(self, memories: MemoryStore, raw: RawEventStore,
                 count: Callable[[str], int]) -> None:
        self.memories, self.raw, self.count = memories, raw, count

    def __call__(self, recalled: Recalled) -> tuple[list[dict[str, Any]], int]:
        """Evidence records and level (1, or 0 when there is none). The whole answer
        (summaries + evidence) stays within ``max_tokens``."""
        evidence = self.evidence(recalled, recalled.retrieved.evidence_budget)
        return evidence, 1 if evidence else 0

    def evidence(self, recalled: Recalled, budget: int,
                 words: Sequence[tuple[str, Line]] = ()) -> list[dict[str, Any]]:
        """Evidence records within ``budget`` tokens, the group of the best line first;
        ``words``: the word-exact cut's lines (memory id, line): candidates too, lifted
        by their share of its best line's score."""
        retrieved = recalled.retrieved
        query, top, user_id = retrieved.query, retrieved.top, retrieved.request.user_id
        ranges = recalled.ranges
        pool = merge(ranges[0::2], ranges[1::2], into=retrieved.found)
        best_words = max((ln.score for _m, ln in words), default=0.0)
        lifted = {(ln.event_id, ln.start): ln.score / best_words for _m, ln in words
                  } if best_words > 0 else {}
        for mid, ln in words:  # after the chunks: a line already in one is read there
            pool[f"words:{ln.event_id}:{ln.start}"] = Found(
                Passage(ln.event_id, ln.event_index, ln.start, ln.text), mid)
        best = top[0].score if top and top[0].score > 0 else 1.0
        range_score = {c.memory.id: max(0.0, c.score / best) for c in top}
        roles = (_roles(self.raw, user_id, pool.values())
                 if query.intent.role or query.intent.first_person else None)
        dated = dated_events(self.raw, user_id, query.text,
                             (f.passage.event_id for f in pool.values()), retrieved.request.now)
        terms = with_verb_forms(query.terms)  # "graded" meets a test named ``…_and_grade``
        ranked = line_pool(pool.values(), terms, query.intent, range_score, roles, dated,
                           query.text, words=lifted)
        known = {**recalled.read, **{c.memory.id: c.memory for c in top}}
        missing = [mid for mid in dict.fromkeys(f.memory_id for f in pool.values())
                   if mid not in known]
        known.update({m.id: m for m in self.memories.get_memories(user_id, missing)})
        threads = {mid: m.source_range.thread_id for mid, m in known.items()}
        chosen = pack_pool(ranked, terms, budget, joined_cost(self.count), threads=threads)
        followed = {c.memory.id for c in recalled.hops}
        include = retrieved.request.include_superseded
        cuts = self._cuts(chosen, known, include)
        # lines are packed by their own costs and a tokenizer does not add up (28 lines
        # costed 626 tokens one by one were 644 joined): the last picks go until it fits
        while chosen and sum(cut.tokens for _m, cut, _s in cuts) > budget:
            chosen = chosen[:-1]
            cuts = self._cuts(chosen, known, include)
        out = []
        for mid, cut, stale in cuts:
            memory = known[mid]
            if not cut.lines:
                continue
            how = "followed range" if mid in followed else "passage search"
            rng = memory.source_range
            item = evidence_record(mid, rng.thread_id, rng.start_index, rng.end_index, cut,
                                   f"{recalled.decision.reason}; level 1; semantic ({how}); "
                                   f"{len(cut.lines)} line(s), {cut.tokens} tokens")
            if stale:
                item["superseded_values"] = stale
            out.append(item)
        return out

    def _cuts(self, chosen: list[Scored], known: dict[str, Observation], include: bool
              ) -> list[tuple[str, Extract, list[str]]]:
        """The chosen lines grouped by memory (the group of the best line first), each in
        source order and costed as its joined text, superseded values dropped."""
        groups: dict[str, list[Line]] = {}
        for s in chosen:  # in pick order: the group of the best line comes first
            if s.memory_id in known:  # indexed but not stored: never guess
                groups.setdefault(s.memory_id, []).append(s.line)
        out = []
        for mid, lines in groups.items():
            lines.sort(key=lambda ln: (ln.event_index, ln.start))
            cut = Extract.joined(lines, self.count, max(ln.score for ln in lines))
            cut, stale = drop_superseded(cut, known[mid], include, self.count)
            out.append((mid, cut, stale))
        return out


def _roles(raw: RawEventStore, user_id: str, found: Iterable[Found]) -> dict[str, str]:
    """Event id -> role of the candidate passages' events (asked only for speaker questions)."""
    events = events_by_id(raw, user_id, [f.passage.event_id for f in found])
    return {eid: e.role for eid, e in events.items()}


def holds_kind(evidence: list[dict[str, Any]], intent: QueryIntent) -> bool:
    """Whether some evidence line holds what the question asks for
    (:func:`processors.asked.holds_asked`: a value of an asked kind, a command, a failure
    line), or the question asks for nothing it can tell: a word-exact cut without one
    missed the value."""
    failure = intent.failure_asked
    if not asks_anything(intent.kinds, failure):
        return True
    return any(holds_asked(str(ln["text"]), intent.kinds, failure)
               for item in evidence for ln in item["lines"])


def names_the_literal(evidence: list[dict[str, Any]], query: Query) -> bool:
    """Whether some evidence line holds the literal the question names (``DB_PORT``,
    ``validate-email.ts``) and the value kind it asks for; with no literal, the kind."""
    if not holds_kind(evidence, query.intent):
        return False
    named = named_literal(query.text, "decide") or named_literal(query.text, "precise")
    if named is None:
        return True
    literal = named.group(0).strip("`")
    return any(literal in str(ln["text"]) for item in evidence for ln in item["lines"])


def needs_meaning(evidence: list[dict[str, Any]], query: Query, quoted: bool = False) -> bool:
    """Whether lines chosen by meaning should replace the word-exact cut: it found
    nothing, the question is not a precise lookup, or it missed the asked value kind.
    ``quoted``: a count asked for that a summary quotes — the cut needs meaning only if
    it holds no count of the thing."""
    if quoted and query.intent.counted:
        count = counts(query.intent.counted)
        return not any(count.search(str(ln["text"])[:MAX_LINE_CHARS])
                       for item in evidence for ln in item["lines"])
    return not evidence or not query.precise or not holds_kind(evidence, query.intent)

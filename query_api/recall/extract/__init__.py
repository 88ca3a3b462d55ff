"""Extract: verbatim lines within the token budget — the stage, and what it uses.

:class:`Extractor` is the pipeline's Extract step (a :class:`~..stages.Recalled` in,
an :class:`~..stages.Extracted` out). It chooses between two cuts of the followed
ranges — the word-exact cut (:mod:`.cut`, levels 1–3) and lines by meaning
(:mod:`.semantic`) — and adds the open windows' lines (:mod:`.fresh_tail`). Every
line is scored in one package, :mod:`..lines.scoring` (one
:class:`~..lines.scoring.LineWeights` per caller; below the stages, Retrieve scores its
passage lead with it too), and packed by :mod:`.pack`; :mod:`.dated` and
:mod:`..lines.speakers` give the date and speaker boosts their inputs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from breadcrumb.processors.lexical import query_terms, with_verb_forms
from breadcrumb.query_api.recall.extract import fresh_tail
from breadcrumb.query_api.recall.extract.cut import Quoter, WordExactCut
from breadcrumb.query_api.recall.extract.learned import LearnedLines, Scored
from breadcrumb.query_api.recall.extract.learned.model import BLANK, Ranker
from breadcrumb.query_api.recall.extract.learned.relevance import RelevanceModel
from breadcrumb.query_api.recall.extract.semantic import (
    LinesByMeaning,
    names_the_literal,
    needs_meaning,
)
from breadcrumb.query_api.recall.lines.scoring.weights import line_terms
from breadcrumb.query_api.recall.passages import Line
from breadcrumb.query_api.recall.stages import Extracted, Recalled
from breadcrumb.stores.ports import MemoryStore, RawEventStore

#: a tool line the word-exact cut chose is lifted among lines by meaning only if it holds
#: at least this many of the question's words
TOOL_LINE_WORDS = 2
#: event kinds of a conversation: their lines are found by meaning (a tool call, its
#: output, an edit, a test result, an importer's note are not)
_TALK = frozenset({"message", "topic_change", "session_end"})


class Extractor:
    """Stage 5: evidence lines from what Recall followed and read."""

    def __init__(self, memories: MemoryStore, raw: RawEventStore, count: Callable[[str], int],
                 window_count: Callable[[str], int], quoter: Quoter | None,
                 errors: Counter[str], ranker: Ranker | None = None,
                 embedder: str = "", learned_lines: bool = False,
                 relevance: RelevanceModel | None = None) -> None:
        self.quoter = quoter
        self.errors = errors
        self.word_exact = WordExactCut(count, quoter, errors)
        self.by_meaning = LinesByMeaning(memories, raw, count)
        # a model rates and ranks under the embedder it was trained with: under another,
        # the rules rank and no relevance is given (it is "not calibrated")
        fits = ranker is not None and ranker.fits(embedder)
        self.calibrated = relevance is not None and relevance.fits(embedder)
        self.relevance_known = relevance is not None
        rater = relevance if self.calibrated else None
        self.learned = LearnedLines(memories, raw, count, ranker, rater) \
            if fits and ranker is not None else None
        # the pool is read for the relevance alone where no model ranks
        self.pool = self.learned or (LearnedLines(memories, raw, count, BLANK, rater)
                                     if rater is not None else None)
        self.learned_lines = learned_lines  # the model ranks the lines (else: the rules)
        self.window_count = window_count

    def __call__(self, recalled: Recalled) -> Extracted:
        pooled = self._pooled(recalled)
        scored = pooled if self.learned is not None and pooled is not None \
            and not _talk(recalled, pooled) else None  # what the model may rank
        evidence, level = self._memory_evidence(recalled, scored) if recalled.follow \
            else ([], 0)
        if scored is not None and self.learned is not None and not self.learned_lines:
            evidence = self.learned.without_replaced(evidence, scored, recalled)
        if recalled.windows is not None:  # the open windows too
            retrieved = recalled.retrieved
            evidence = fresh_tail.merge(retrieved.query, evidence, recalled.windows,
                                        self.window_count, retrieved.evidence_budget)
            level = max(level, 2) if any(e.get("observed") is False for e in evidence) else level
        relevance = None if pooled is None or self.pool is None \
            else self.pool.relevance(pooled)
        return Extracted(evidence, level, relevance,
                         None if not self.relevance_known else self.calibrated)

    def _pooled(self, recalled: Recalled) -> Scored | None:
        """The candidates with their features (and the model's scores where a model
        ranks): read when a model ranks or the relevance model rates (None: neither)."""
        if self.pool is None:
            return None
        if self.learned is not None and self.pool.calibrated is None \
                and _talk_ranges(recalled):
            return None  # a conversation: its lines stay with meaning, nothing to rate
        return self.pool.score(recalled)

    def _memory_evidence(self, recalled: Recalled, scored: Scored | None
                         ) -> tuple[list[dict[str, Any]], int]:
        """The word-exact cut, or lines by meaning where it needs meaning (a question not
        precise always does: the cut only when those are none; a quoter: always cut). A
        count a summary quotes (:attr:`Recalled.quoted`) is looked up by words. Where the
        model ranks, a quoter (an LLM) chooses among its best lines (level 3)."""
        query = recalled.retrieved.query
        if self.learned is not None and scored is not None and self.learned_lines:
            evidence, level = self.learned(recalled, scored, self.quoter, self.errors)
            if evidence:
                return evidence, level
        if self.quoter is None and not query.precise and not recalled.quoted:
            return self._words_and_meaning(recalled)
        cut = self.word_exact.with_history(recalled)
        evidence, level = cut.evidence, cut.level
        if needs_meaning(evidence, query, recalled.quoted):  # meaning and words
            semantic, used = self.by_meaning(recalled)
            if semantic and not (cut.history and not evidence
                                 and not names_the_literal(semantic, query)):
                return semantic, used
        if not evidence and cut.history:  # the exact lines, marked as history, not none
            return cut.history, cut.history_level
        return evidence, level

    def _words_and_meaning(self, recalled: Recalled) -> tuple[list[dict[str, Any]], int]:
        """A question that is no precise lookup: lines by meaning, with the word-exact
        cut's lines of the followed ranges' tool calls, outputs, edits and notes among the
        candidates, lifted by their word score (:func:`tool_lines`)."""
        kinds = _hop_kinds(recalled)
        if all(kind in _TALK for kind in kinds.values()):  # a conversation: meaning
            semantic, used = self.by_meaning(recalled)
            return (semantic, used) if semantic else self.word_exact(recalled)
        cut = self.word_exact.with_history(recalled)
        question = recalled.retrieved.query.text
        semantic = self.by_meaning.evidence(recalled, recalled.retrieved.evidence_budget,
                                            tool_lines(question, cut.lines, kinds))
        if not semantic:  # nothing by meaning: the word-exact cut
            return cut.evidence, cut.level
        return semantic, 1


def _talk_ranges(recalled: Recalled) -> bool:
    """Whether the followed ranges hold conversation alone (messages)."""
    kinds = _hop_kinds(recalled)
    return bool(kinds) and all(kind in _TALK for kind in kinds.values())


def _talk(recalled: Recalled, scored: Scored) -> bool:
    """Whether the recall reads a conversation alone: its lines stay with meaning (the
    line ranker was trained on agent sessions), though the relevance model rates it."""
    return _talk_ranges(recalled) or all(c.kind in _TALK for c in scored.pool.lines)


def _hop_kinds(recalled: Recalled) -> dict[str, str]:
    """Event id -> kind of the followed ranges' events (read once, by the range reader)."""
    if recalled.events is None:
        return {}
    return {e.event_id: e.kind for c in recalled.hops for e in recalled.events.events(c.memory)}


def tool_lines(question: str, lines: list[tuple[str, Line]], kinds: Mapping[str, str]
               ) -> list[tuple[str, Line]]:
    """The ``lines`` (memory id, line) of events that are no message (``kinds``: event id
    -> kind, of the followed ranges; a line of another event is left out).

    What a tool printed, a command, an edit, a test result is found by its words: a
    terraform ``Plan: 27 to add, 0 to change, 0 to destroy.`` holding every word of the
    question lost, by meaning alone, to the plan's prose in a closer chunk, and an ``ls:
    …: No such file or directory`` to the ``ls -l`` before it. A message is found by
    meaning: lifting the word-exact cut's conversation turns cost LoCoMo evidence
    (0.766 -> 0.753 on the same stored dir). A line holding fewer than
    :data:`TOOL_LINE_WORDS` of the question's words is not lifted: the best of a poor
    cut (``ls -la …/pfm-categorization/src/``, the project's name alone) is no answer.
    Ranges of messages alone (a conversation) are not cut by words at all."""
    asked = list(dict.fromkeys(terms for word in question.split()
                               if (terms := frozenset(with_verb_forms(query_terms(word))))))
    return [(mid, ln) for mid, ln in lines if kinds.get(ln.event_id, "message") not in _TALK
            and _words_held(asked, ln.text) >= TOOL_LINE_WORDS]


def _words_held(asked: list[frozenset[str]], text: str) -> int:
    """How many of the question's words (``asked``: each word's terms) ``text`` holds."""
    held = line_terms(text)  # the scorers' own reading of a line (cached; no stopwords:
    # ``used`` also asks ``us``, a stopword, which is no word of the question in a line)
    return sum(1 for terms in asked if terms & held)

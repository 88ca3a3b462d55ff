"""Extract's line scoring, one module: every line recall offers is scored here.

Two scorers share one weights object (:class:`LineWeights`), one instance per caller:

* :func:`score_exact` (:data:`EXACT`) — the word-exact cut: the weighted query terms a
  line holds (stopwords and particles dropped, :func:`processors.lexical.query_terms`),
  plus boosts for holding the *kind* of exact value the question asks for (regex, port,
  SQL, ...; :func:`processors.hints.extract_typed_values`), failure lines on failure
  questions, lines a file edit added, and decisions. Lines that repeat one shape many
  times (2,000 ``PASSED`` lines) are damped, a long line's term weight shrinks with its
  length, a tool call's lookup arguments keep half their score, and an error's detail line
  takes its header's score.
* :func:`score_semantic` (:data:`SEMANTIC`) — lines by meaning: the passage's dense
  similarity (min-max over the pool), the line's lexical coverage of the question terms
  (each weighted by its rarity among the pool's lines), the kind / failure boosts, the
  score of the range (memory) it comes from, and the role, date (:mod:`.dated`) and
  speaker (:mod:`.speakers`) boosts; a turn next to a strong one takes a share of its
  lead, lines of one repeated shape are damped. It works on plain per-line columns
  (:class:`LinePool`) and builds a :class:`Line` only for a line that is returned.

Quoting (level 3) scores nothing: a quoted line keeps the score it is given.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial

from breadcrumb.processors.hints import holds_kind as text_holds_kind
from breadcrumb.processors.hints import value_kinds
from breadcrumb.processors.lexical import (
    EN_STOPWORDS,
    lexical_terms,
    query_terms,
    with_compounds,
    with_verb_forms,
)
from breadcrumb.processors.test_runs import counts
from breadcrumb.query_api.recall.extract.edits import DIFF, EDIT_MARKERS, EditLines, is_edit
from breadcrumb.query_api.recall.extract.shapes import (
    DECISION,
    DIFF_HEADER,
    FAILURE_HEADER,
    IMPORT_MARKER,
    LOOKUP_ARGS,
    MAX_LINE_CHARS,
    command_line,
    failure_line,
)
from breadcrumb.query_api.recall.extract.speakers import named_speakers, speaker
from breadcrumb.query_api.recall.extract.term_groups import TermGroups
from breadcrumb.query_api.recall.passages import Found, Line, Passage, split_lines
from breadcrumb.query_api.recall.query import Query, QueryIntent, analyze_query


@dataclass(frozen=True, slots=True)
class LineWeights:
    """What a line's score adds up. The two scorers weigh the shared boosts differently
    (a word-exact score is a sum of term weights, a semantic one a 0..~3 fusion)."""

    kind: float  # the line holds a value of a kind the question asks for
    failure: float  # a failure line, on a failure question
    added_line: float = 0.0  # word-exact: a line a file edit added ...
    removed_line: float = 0.0  # ... and the penalty of one it removed
    decision: float = 0.0  # word-exact: a decision ("we agreed", "決定")
    call: float = 0.0  # word-exact: per question term a result's call holds (processors.calls)
    dense: float = 0.0  # semantic: the passage's normalised dense similarity
    lexical: float = 0.0  # semantic: the share of question weight the line holds
    range: float = 0.0  # semantic: the score of the range (memory) it comes from
    role: float = 0.0  # semantic: a line of the speaker asked about ("what the user said")
    mine: float = 0.0  # semantic: a user's line, on a question in the first person
    date: float = 0.0  # semantic: said within the period named ("in August 2023")
    speaker: float = 0.0  # semantic: a transcript line of a person the question names
    neighbor_share: float = 0.0  # semantic: share of an adjacent turn's lead (question -> answer)
    words: float = 0.0  # semantic: a line the word-exact cut chose, times its share of the best


#: lines by meaning: a word-exact line's lift at the best word score (:func:`line_pool`)
WORDS = 2.0
EXACT = LineWeights(kind=2.0, failure=2.0, added_line=1.0, removed_line=0.5, decision=0.5,
                    call=0.5)
SEMANTIC = LineWeights(kind=0.5, failure=0.5, dense=1.0, lexical=1.2, range=0.35, role=1.0,
                       words=WORDS,
                       date=0.8, speaker=0.2, neighbor_share=0.5, mine=0.3)
DATE_BOOST = SEMANTIC.date
SPEAKER_BOOST = SEMANTIC.speaker
POOL_IDF = True
EXACT_IDF = True  # word-exact: question terms weighted by their rarity among the lines cut
LONG_LINE_TERMS = 24  # word-exact: a line of more distinct terms ...
BREVITY_POWER = 1.0  # ... keeps (LONG_LINE_TERMS / terms) ** this of its term weight
#: word-exact: what a tool call's lookup arguments (:data:`.shapes.LOOKUP_ARGS`) keep of
#: their score (held-out real sessions: ``{"filePath": "…/HomeController.cs"}`` outscored
#: the csproj line it asked about)
LOOKUP_SHARE = 0.5
REPEAT_DAMPING_FROM = 4  # word-exact: a line shape seen this often is damped
TYPED_SCAN_LIMIT = 64  # word-exact: typed values are read for this many best lines only
_SHAPE_NOISE = re.compile(r"[\d\s]+")
_WORDY = re.compile(r"\w")  # a line of punctuation alone (``.``, ``>``, ``});``) answers nothing
_KEYED_VERSION = re.compile(r"(?i)[\w-]*version[\"']?\s*[:=]\s*[\"']?[\w.@/*^~<>=-]+")
# pure per-line work, cached: the lead and the packing both score a pool, lines recur
_shape = lru_cache(maxsize=32768)(partial(_SHAPE_NOISE.sub, ""))
_holds_kind = lru_cache(maxsize=32768)(text_holds_kind)


@lru_cache(maxsize=32768)
def _typed_kinds(text: str) -> frozenset[str]:
    """The kinds of typed value a line holds (cached: the same lines are cut again)."""
    kinds = value_kinds(text[:MAX_LINE_CHARS])
    # a setting named a version holds one, whatever it looks like: ``database_version =
    # "POSTGRES_15"``, ``"node-version": "lts/*"``
    return kinds | {"version"} if _KEYED_VERSION.search(text[:MAX_LINE_CHARS]) else kinds



# ---------------------------------------------------------------- word-exact
def score_exact(query: str, items: Sequence[Passage], intent: QueryIntent | None = None,
                w: LineWeights = EXACT, calls: Mapping[str, str] | None = None,
                terms: dict[str, float] | None = None) -> list[Line]:
    """Every line that matches the query, scored (see the module docstring). ``calls``:
    a result event's id -> the call it answers (:mod:`processors.calls`); the question terms the
    call holds count for the result's matching lines. ``terms``: the question's term weights
    (:func:`exact_weights` over every line a recall cuts); default: over ``items``."""
    intent = intent or analyze_query(query)
    split = [(passage, split_lines(passage)) for passage in items]
    if terms is None:
        terms = exact_weights(query, [t for _p, rows in split for _s, _e, t in rows])
    groups = TermGroups(query, terms)
    calls = calls or {}
    found: list[tuple[Passage, int, int, str, float]] = []
    for passage, rows in split:
        edit = EditLines(passage, terms, groups) if is_edit(passage) else None
        call = passage.event_id in calls and set(lexical_terms(calls[passage.event_id]))
        context = {t: v for t, v in terms.items() if t in call} if call else {}
        lead = after = 0.0  # the line before's score if a failure line; a header's
        for start, end, text in rows:
            if edit is not None and edit.marker(start, text):
                continue
            if DIFF_HEADER.match(text) or IMPORT_MARKER.match(text):
                continue
            failing = intent.failure and failure_line(text)  # read once a line
            base = _line_score(text, passage, groups, failing, w,
                               edit.side(start) if edit is not None else "", context,
                               edit is not None)
            if base > 0 and edit is not None and not edit.is_header(start):
                base += edit.context(text, start)
            if intent.failure:  # an error's detail line says what its header only names
                base, lead, after = _in_failure(text, failing, base, lead, after, w)
            if base > 0:
                found.append((passage, start, end, text, base))
    # a shape seen in many *different* lines is damped (2,000 ``PASSED`` node ids); the
    # same line said again (a tool output repeated by the next turn) is one line, not many
    shapes = Counter(_shape(text) for text in {text for _p, _s, _e, text, _b in found})
    lines = [
        Line(p.event_id, p.event_index, s, e, text, _damped(b, shapes[_shape(text)]))
        for p, s, e, text, b in found
    ]
    return [Line(ln.event_id, ln.event_index, ln.start, ln.end, ln.text, ln.score * LOOKUP_SHARE)
            if LOOKUP_ARGS.match(ln.text) else ln for ln in _kind_boosted(lines, intent, w)]


def exact_weights(query: str, lines: Iterable[str]) -> dict[str, float]:
    """The word-exact cut's question term weights: each term's weight times its rarity
    among the distinct ``lines`` (a term on every line of the source tells little; the
    same pool for every range one recall cuts, so their lines compare)."""
    terms = with_compounds(query, with_verb_forms(query_terms(query)))
    if not EXACT_IDF:
        return terms
    return pool_weights(terms, [_line_terms(text) for text in set(lines)])


def _line_score(text: str, passage: Passage, groups: TermGroups, failing: bool,
                w: LineWeights, side: str = "", context: dict[str, float] | None = None,
                edit: bool = False) -> float:
    """``failing``: a failure line on a failure question (it gets ``w.failure``)."""
    line_terms = _line_terms(text)  # cached: the same lines recur across ranges and recalls
    held = [t for t in groups.terms if t in line_terms]
    score = words = groups.weight(held) * _brevity(len(line_terms))
    if failing:
        score += w.failure
    if score <= 0:
        return 0.0
    if context:  # the call's question terms, for a line of its output that matches
        lacking = [t for t in context if t not in line_terms]
        if lacking:  # what the call's terms add, a question word once (:mod:`.term_groups`)
            score += w.call * (groups.weight(held + lacking) - words)
    edit = edit or passage.kind == "file_edit"  # a chunk of an edit has no kind
    if side == "new" or edit and not side and text.startswith("+"):
        score += w.added_line
    elif side == "old" or edit and not side and text.startswith("-"):
        score -= w.removed_line
    if DECISION.search(text[:MAX_LINE_CHARS]):
        score += w.decision
    return max(score, 0.0)


def _in_failure(text: str, failing: bool, score: float, lead: float, after: float,
                w: LineWeights) -> tuple[float, float, float]:
    """A line's score on a failure question, within an error's lines: the line after a
    failure header (``🚨 Invalid docs.json:``, ``Error while validating view near:``)
    takes the header's score, and a header takes that of a failure line right before it
    (``…ParseError: while parsing …xml:17``). The detail (``#.colors: Unrecognized
    key(s) in object: 'background'``) rarely holds the question's words; its header
    does. ``failing``: :func:`.shapes.failure_line` of ``text``. Returns the line's score,
    the ``lead`` and ``after`` for the next line."""
    header = text.rstrip().endswith(":") and (failing or FAILURE_HEADER.search(text) is not None)
    if header and not failing:  # a header in other words (``Invalid``) is a failure line
        score += w.failure
    score = max(score, after, lead if header else 0.0)
    return score, score if failing or header else 0.0, score if header else 0.0


def _brevity(terms: int) -> float:
    """What a line of ``terms`` distinct terms keeps of its question-term weight: a long
    line holds many question words by its length alone (a paragraph explaining an error
    outscored the error it quotes)."""
    return 1.0 if terms <= LONG_LINE_TERMS else (LONG_LINE_TERMS / terms) ** BREVITY_POWER


def _damped(score: float, repeats: int) -> float:
    if repeats < REPEAT_DAMPING_FROM:
        return score
    return score / (1.0 + math.log2(repeats))


def _kind_boosted(lines: list[Line], intent: QueryIntent, w: LineWeights) -> list[Line]:
    """Boost the best lines that hold a value of a kind the question asks for (or the
    count a "how many" question asks for). On a failure question only failure lines:
    "which test failed" asks for the failing node id, and the 1,999 passing ones of the
    same log hold that kind too. On a command question only command lines."""
    if intent.counted:
        count = counts(intent.counted)
        lines = [Line(ln.event_id, ln.event_index, ln.start, ln.end, ln.text, ln.score + w.kind)
                 if count.search(ln.text[:MAX_LINE_CHARS]) else ln for ln in lines]
    if not intent.kinds:
        return lines
    order = sorted(range(len(lines)), key=lambda i: -lines[i].score)[:TYPED_SCAN_LIMIT]
    out = list(lines)
    for i in order:
        line = lines[i]
        command = command_line(line.text, intent)
        if intent.failure and not command and not failure_line(line.text):
            continue  # "which command showed only the errors": its command line still
        kinds = set(_typed_kinds(line.text))
        if command:
            kinds.add("command")
        elif "command" in intent.kinds:  # "how did we retire the old … file": the
            continue  # command is asked, the file only names what it acted on (n08)
        if kinds & intent.kinds:
            out[i] = Line(line.event_id, line.event_index, line.start, line.end, line.text,
                          line.score + w.kind)
    return out


# ---------------------------------------------------------------- by meaning
@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate line with its fused score and the memory (range) it belongs to."""

    line: Line
    memory_id: str
    terms: frozenset[str]


class LinePool:
    """The candidate lines of a pool as columns, and their fused scores.

    ``raw``: the fused score before neighbours and damping (a :class:`Line`'s ``score``);
    ``final``: the ranking score; ``order``: line positions best first (ties: event
    index, then start offset, then pool order).
    """

    __slots__ = ("found", "line", "raw", "final", "order")

    def __init__(self, found: list[Found], line: list[_Line],
                 raw: list[float], final: list[float], order: list[int]) -> None:
        self.found, self.line, self.raw, self.final, self.order = found, line, raw, final, order

    def scored(self, i: int) -> Scored:
        f, (start, end, text, terms, _shape) = self.found[i], self.line[i]
        p = f.passage
        return Scored(Line(p.event_id, p.event_index, start, end, text, round(self.raw[i], 6)),
                      f.memory_id, terms)


def line_pool(found: Iterable[Found], terms: dict[str, float], intent: QueryIntent,
              range_score: dict[str, float], roles: dict[str, str] | None = None,
              dated: frozenset[str] = frozenset(), question: str = "",
              w: LineWeights = SEMANTIC, words: Mapping[tuple[str, int], float] | None = None
              ) -> LinePool:
    """Every distinct line of the candidate passages, scored (see :func:`score_semantic`).
    ``words``: (event id, start) -> a word-exact score's share of the best (0..1)."""
    groups = _groups(list(found), intent.temporal == "oldest")
    rows = [(f, line) for f, _dense, lines in groups for line in lines]
    lines = [line for _f, line in rows]
    weights = pool_weights(terms, [ln[3] for ln in lines])
    raw = _fused(groups, weights, intent, range_score, roles or {}, dated, w)
    if words:
        raw = [sc + w.words * words.get((f.passage.event_id, ln[0]), 0.0)
               for sc, (f, ln) in zip(raw, rows, strict=True)]
    lifted = _with_neighbors(raw, groups, w.neighbor_share) if w.neighbor_share > 0 else raw
    # 40 different lines of one shape: one of them is enough; one line repeated verbatim
    # (an output the next turn quotes again) is one line, and packing keeps one copy
    counts = Counter(shape for shape, _text in {(ln[4], ln[2]) for ln in lines})
    named = named_speakers(question, (ln[2] for ln in lines)) if question else frozenset()
    final = [sc / (1.0 + max(0, counts[ln[4]] - 3))
             + (w.speaker if named and speaker(ln[2]) in named else 0.0)
             for sc, ln in zip(lifted, lines, strict=True)]
    keys = [(-sc, f.passage.event_index, ln[0]) for sc, (f, ln) in zip(final, rows, strict=True)]
    order = sorted(range(len(final)), key=keys.__getitem__)
    return LinePool([f for f, _ln in rows], lines, raw, final, order)


_Line = tuple[int, int, str, frozenset[str], str]  # start, end, text, terms, shape


_Group = tuple[Found, float, list[_Line]]  # a passage, its normalised dense score, its lines


def _groups(found: list[Found], keep_removed: bool) -> list[_Group]:
    """Each passage with its lines not seen in an earlier passage (same event, same
    start), and its dense similarity min-max normalised over the pool."""
    cosines = [f.dense for f in found if f.dense is not None]
    hi, lo = (max(cosines), min(cosines)) if cosines else (1.0, 0.0)
    seen: set[tuple[str, int]] = set()
    out = []
    for f in found:
        eid = f.passage.event_id
        fresh = []
        for line in _lines(f.passage.text, f.passage.offset, keep_removed):
            if (eid, line[0]) not in seen:
                seen.add((eid, line[0]))
                fresh.append(line)
        dense = 0.0 if f.dense is None else (1.0 if hi <= lo else (f.dense - lo) / (hi - lo))
        out.append((f, dense, fresh))
    return out


def _fused(groups: list[_Group], weights: dict[str, float],
           intent: QueryIntent, range_score: dict[str, float], roles: dict[str, str],
           dated: frozenset[str], w: LineWeights) -> list[float]:
    """Each line's fused score before neighbours and damping."""
    total = sum(weights.values()) or 1.0
    keys = frozenset(weights)
    position = {t: i for i, t in enumerate(weights)}.__getitem__
    boosted = intent.failure or bool(intent.kinds) or intent.counted is not None
    out = []
    for f, normalised, lines in groups:
        dense = w.dense * normalised
        rng = w.range * range_score.get(f.memory_id, 0.0)
        role = bool(intent.role) and roles.get(f.passage.event_id) == intent.role
        mine = intent.first_person and roles.get(f.passage.event_id) == "user"
        date = f.passage.event_id in dated
        header = _edit_header(f.passage, lines, keys)
        for line in lines:
            common = line[3] & keys
            if common and header and line[0] != f.passage.offset:
                common = common | header  # a line of an edit is about the file it names
            if not common:
                lexical = 0.0
            elif len(common) == 1:
                lexical = weights[next(iter(common))] / total  # sum([w]) is w
            else:  # added up in ``weights`` order, as a sum over ``weights`` would
                lexical = sum([weights[t] for t in sorted(common, key=position)]) / total
            score = dense + w.lexical * lexical
            score += rng + (_boosts(line[2], intent, w) if boosted else 0.0)
            if role:
                score += w.role
            elif mine:
                score += w.mine
            if date:
                score += w.date
            out.append(score)
    return out


def _edit_header(passage: Passage, lines: list[_Line], keys: frozenset[str]) -> frozenset[str]:
    """The question terms an edit's header line (``Edit path``) holds, for its other lines."""
    if not is_edit(passage) or not lines or lines[0][0] != passage.offset \
            or passage.offset != 0:
        return frozenset()
    return lines[0][3] & keys


def score_semantic(found: Iterable[Found], terms: dict[str, float], intent: QueryIntent,
                range_score: dict[str, float], roles: dict[str, str] | None = None,
                dated: frozenset[str] = frozenset(), question: str = ""
                ) -> list[tuple[float, Scored]]:
    """Every line of the candidate passages with its fused score, best first.

    A question term's weight is scaled by its rarity among the candidate lines (a
    speaker's name on every line tells nothing), like an IDF over the pool. ``roles``
    (event id -> role) lifts the lines of the speaker the question asks about; ``dated``
    (event ids said within the period the question names) lifts those events' lines;
    ``question`` lifts the transcript lines of a speaker it names (:mod:`.speakers`).
    """
    pool = line_pool(found, terms, intent, range_score, roles, dated, question)
    return [(pool.final[i], pool.scored(i)) for i in pool.order]


@lru_cache(maxsize=32768)
def _line_terms(text: str) -> frozenset[str]:
    """A line's question-comparable terms (cached: the lead and the packing both score a
    pool, and the same lines recur across questions)."""
    return frozenset(t for t in lexical_terms(text[:MAX_LINE_CHARS]) if t not in EN_STOPWORDS)


@lru_cache(maxsize=16384)
def _lines(text: str, offset: int, keep_removed: bool) -> tuple[_Line, ...]:
    """(start, end, text, terms, shape) of a passage's lines, a diff's removed lines left
    out unless kept; pure, so cached (the lead and the packing score the same passages)."""
    diff = not keep_removed and DIFF.search(text) is not None
    return tuple((start, end, line, _line_terms(line), _shape(line))
                 for start, end, line in split_lines(Passage("", 0, offset, text))
                 if not (diff and _removed(line)) and line not in EDIT_MARKERS
                 and not IMPORT_MARKER.match(line) and _WORDY.search(line))


def _removed(line: str) -> bool:
    return line.startswith("-") and not line.startswith("---")


def _with_neighbors(scores: list[float], groups: list[_Group], share: float) -> list[float]:
    """Each line lifted by ``share`` of its lead over it of the best line of an
    adjacent event of the same range: ``max(score, score + share * (near - score))``."""
    spans = []
    best: dict[tuple[str, int], float] = {}
    end = 0
    for f, _dense, lines in groups:
        key, start, end = (f.memory_id, f.passage.event_index), end, end + len(lines)
        if lines:
            best[key] = max(best.get(key, 0.0), max(scores[start:end]))
        spans.append((key, start, end))
    lifted: list[float] = []
    for (mid, idx), start, end in spans:
        near = max(best.get((mid, idx - 1), 0.0), best.get((mid, idx + 1), 0.0))
        # near <= score: the lifted value is never above the score, which max() keeps
        lifted += [sc if near <= sc else sc + share * (near - sc)
                   for sc in scores[start:end]]
    return lifted


def pool_weights(terms: dict[str, float], lines: Sequence[frozenset[str]]) -> dict[str, float]:
    """Question term weights times their rarity among ``lines`` (1.0 when in one line)."""
    if not POOL_IDF or len(lines) < 2:
        return dict(terms)
    n = len(lines)
    norm = math.log(1.0 + n)
    keys = frozenset(terms)
    df = Counter([t for line in lines for t in line & keys])
    out = {}
    for term, weight in terms.items():
        count = df[term]
        out[term] = weight * (math.log(1.0 + n / count) / norm if count else 1.0)
    return out


def _boosts(text: str, intent: QueryIntent, w: LineWeights) -> float:
    boost = 0.0
    if intent.counted and counts(intent.counted).search(text[:MAX_LINE_CHARS]):
        boost += w.kind
    if intent.failure and failure_line(text):
        boost += w.failure
    if intent.kinds and (_holds_kind(text[:MAX_LINE_CHARS], intent.kinds)
                         or command_line(text, intent)):
        boost += w.kind
    return boost


def passage_lead(found: dict[str, Found], query: Query) -> dict[str, float]:
    """Memory id -> its best line's fused score as a share of the best line's (0..1)."""
    pool = line_pool(found.values(), query.terms, query.intent, {})
    best: dict[str, float] = {}
    for i in pool.order:  # best first: the memories in the order of their best line
        mid = pool.found[i].memory_id
        best[mid] = max(best.get(mid, 0.0), pool.final[i])
    top = max(best.values(), default=0.0)
    return {mid: v / top for mid, v in best.items()} if top > 0 else {}



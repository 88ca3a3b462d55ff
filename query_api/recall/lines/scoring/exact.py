"""The word-exact cut's line scorer (:func:`score_exact`; what it adds up: the package's
docstring)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from breadcrumb.processors.hints import value_kinds
from breadcrumb.processors.lexical import (
    lexical_terms,
    query_terms,
    with_compounds,
    with_verb_forms,
)
from breadcrumb.processors.test_runs import counts
from breadcrumb.processors.text_cache import text_cache
from breadcrumb.query_api.recall.lines.edits import EditLines, is_edit
from breadcrumb.query_api.recall.lines.scoring.weights import (
    EXACT,
    LineWeights,
    line_shape,
    line_terms,
    pool_weights,
)
from breadcrumb.query_api.recall.lines.shapes import (
    DECISION,
    DIFF_HEADER,
    FAILURE_HEADER,
    IMPORT_MARKER,
    LOOKUP_ARGS,
    MAX_LINE_CHARS,
    command_line,
    failure_line,
)
from breadcrumb.query_api.recall.lines.term_groups import TermGroups
from breadcrumb.query_api.recall.passages import Line, Passage, split_lines
from breadcrumb.query_api.recall.question import QueryIntent, analyze_query, named_by_kind

EXACT_IDF = True  # word-exact: question terms weighted by their rarity among the lines cut
LONG_LINE_TERMS = 24  # word-exact: a line of more distinct terms ...
BREVITY_POWER = 1.0  # ... keeps (LONG_LINE_TERMS / terms) ** this of its term weight
#: word-exact: what a tool call's lookup arguments (:data:`.shapes.LOOKUP_ARGS`) keep of
#: their score (held-out real sessions: ``{"filePath": "…/HomeController.cs"}`` outscored
#: the csproj line it asked about)
LOOKUP_SHARE = 0.5
REPEAT_DAMPING_FROM = 4  # word-exact: a line shape seen this often is damped
TYPED_SCAN_LIMIT = 64  # word-exact: typed values are read for this many best lines only
#: word-exact: the weight of a word naming the value asked for a kind of ("which *Next.js*
#: version …", :func:`..question.named_by_kind`) against the question's other words
NAMED_BY_KIND = 2.0

_KEYED_VERSION = re.compile(r"(?i)[\w-]*version[\"']?\s*[:=]\s*[\"']?[\w.@/*^~<>=-]+")


@text_cache(32768)
def typed_kinds(text: str) -> frozenset[str]:
    """The kinds of typed value a line holds (cached: the same lines are cut again)."""
    kinds = value_kinds(text[:MAX_LINE_CHARS])
    # a setting named a version holds one, whatever it looks like: ``database_version =
    # "POSTGRES_15"``, ``"node-version": "lts/*"``
    return kinds | {"version"} if _KEYED_VERSION.search(text[:MAX_LINE_CHARS]) else kinds

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
    failing_at: set[tuple[str, int]] = set()  # (event id, start) of the failure lines
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
            if failing:
                failing_at.add((passage.event_id, start))
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
    shapes = Counter(line_shape(text) for text in {text for _p, _s, _e, text, _b in found})
    lines = [
        Line(p.event_id, p.event_index, s, e, text, _damped(b, shapes[line_shape(text)]))
        for p, s, e, text, b in found
    ]
    return [Line(ln.event_id, ln.event_index, ln.start, ln.end, ln.text, ln.score * LOOKUP_SHARE)
            if LOOKUP_ARGS.match(ln.text) else ln
            for ln in _kind_boosted(lines, intent, w, failing_at)]


def exact_weights(query: str, lines: Iterable[str]) -> dict[str, float]:
    """The word-exact cut's question term weights: each term's weight times its rarity
    among the distinct ``lines`` (a term on every line of the source tells little; the
    same pool for every range one recall cuts, so their lines compare)."""
    terms = with_compounds(query, with_verb_forms(query_terms(query)))
    named = {t for word in named_by_kind(query) for t in with_verb_forms(query_terms(word))}
    if named:  # "which Next.js version did the build report when we checked the Zerion
        # readiness feature": `▲ Next.js 15.5.15`, not the readiness notes (held-out hc3)
        terms = {t: w * NAMED_BY_KIND if t in named else w for t, w in terms.items()}
    if not EXACT_IDF:
        return terms
    return pool_weights(terms, [line_terms(text) for text in set(lines)])


def _line_score(text: str, passage: Passage, groups: TermGroups, failing: bool,
                w: LineWeights, side: str = "", context: dict[str, float] | None = None,
                edit: bool = False) -> float:
    """``failing``: a failure line on a failure question (it gets ``w.failure``)."""
    held_terms = line_terms(text)  # cached: the same lines recur across ranges and recalls
    held = [t for t in groups.terms if t in held_terms]
    score = words = groups.weight(held) * _brevity(len(held_terms))
    if failing:
        score += w.failure
    if score <= 0:
        return 0.0
    if context:  # the call's question terms, for a line of its output that matches
        lacking = [t for t in context if t not in held_terms]
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


def _kind_boosted(lines: list[Line], intent: QueryIntent, w: LineWeights,
                  failing_at: set[tuple[str, int]]) -> list[Line]:
    """Boost the best lines that hold a value of a kind the question asks for (or the
    count a "how many" question asks for). On a failure question only failure lines:
    "which test failed" asks for the failing node id, and the 1,999 passing ones of the
    same log hold that kind too (``failing_at``: the failure lines' event id and start, as
    :func:`score_exact` read them). On a command question only command lines."""
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
        if intent.failure and not command and (line.event_id, line.start) not in failing_at:
            continue  # "which command showed only the errors": its command line still
        kinds = set(typed_kinds(line.text))
        if command:
            kinds.add("command")
        elif "command" in intent.kinds:  # "how did we retire the old … file": the
            continue  # command is asked, the file only names what it acted on (n08)
        if kinds & intent.kinds:
            out[i] = Line(line.event_id, line.event_index, line.start, line.end, line.text,
                          line.score + w.kind)
    return out


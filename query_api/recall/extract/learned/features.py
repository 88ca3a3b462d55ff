"""What the learned ranker reads of a candidate line: one row of numbers per line.

Every feature is a plain measurement — how much of the question a line holds, how close
its passage is by meaning, what kind of line it is, where it stands — and none carries a
hand-set weight: the weights are learned (:mod:`.model`, trained by
``python -m breadcrumb.eval.ranker train``). Features measured against the pool (a line's
lexical coverage as a share of the pool's best) sit beside absolute ones (the coverage
itself, the passage's raw cosine), so the same row serves ranking within a question and
telling a strong match from none (:mod:`.relevance`).

Names are part of the model file's contract: a model lists the names it was trained on,
and :func:`feature_rows` fills them by name (a name it does not know is refused at load).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from breadcrumb.processors.failures import DIAGNOSTIC, failure_line
from breadcrumb.processors.shell import MAX_LINE_CHARS, SHELL_COMMAND
from breadcrumb.processors.test_runs import counts
from breadcrumb.processors.text_cache import text_cache
from breadcrumb.query_api.recall.lines.scoring.exact import typed_kinds
from breadcrumb.query_api.recall.lines.scoring.weights import line_shape, line_terms
from breadcrumb.query_api.recall.lines.shapes import DECISION, DIFF_HEADER, LOOKUP_ARGS
from breadcrumb.query_api.recall.lines.term_groups import TermGroups
from breadcrumb.query_api.recall.question import Query

_TEST_SUMMARY = re.compile(r"(?i)\b\d+\s+(passed|failed|tests?|errors?|skipped)\b"
                           r"|\btests?:?\s+\d+|\bran \d+ tests?\b|^(PASS|FAIL)\s+\S")
_ASSIGNMENT = re.compile(r"""^\s*[+-]?\s*(export\s+)?["']?[A-Za-z_][\w.-]*["']?\s*(=|:)\s*\S""")
_PATH_HEADER = re.compile(r"^(\+\+\+ b/|--- a/|\*\*\* (Update|Add|Delete) File: |diff --git )")
_CODE = re.compile(r"^\s{2,}\S|[{}();]\s*$|^\s*(def|class|function|const|let|var|import|from"
                   r"|return|if|for|while)\b")
_PROSE = re.compile(r"^[A-Z][^{}=<>|]*[a-z][.!?:]?\s*$")
_NUMBER = re.compile(r"\d")
_QUOTED = re.compile(r"[`'\"]")

#: the event kinds a line can come from, one feature each (others: ``kind_other``)
KINDS = ("message", "tool_call", "tool_result", "file_edit", "test_result", "error")
#: the feature names, in the order a row holds them
NAMES: tuple[str, ...] = (
    "lex_cov", "lex_cov_rel", "lex_words", "lex_all_words", "lex_ctx", "lex_rare",
    "lex_zero", "dense", "dense_rel", "dense_has", "sparse_has", "raw_score", "raw_rank_inv",
    "raw_top8",
    "kind_asked", "kind_any", "command_asked", "failure_asked", "count_asked",
    "is_command", "is_failure", "is_test_summary", "is_assignment", "is_diff_header",
    "is_added", "is_removed", "is_lookup", "is_decision", "is_code", "is_prose",
    "has_digit", "has_quote", "tokens_log", "terms_log", "repeats_log",
    *(f"kind_{k}" for k in KINDS), "kind_other", "role_user", "role_assistant",
    "mem_rank_inv", "mem_score_rel", "followed", "line_pos_log", "first_line",
    "near_lex", "superseded", "role_asked", "mine", "dated",
    "q_precise_lex", "q_precise_dense", "q_kinds", "q_failure", "q_terms_log",
)
INDEX = {name: i for i, name in enumerate(NAMES)}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A candidate line and what the pool knows of it (:mod:`.candidates`)."""

    memory_id: str
    event_id: str
    event_index: int
    start: int
    end: int
    text: str
    kind: str  # the event's kind ("" where only a chunk was read)
    role: str
    mem_rank: int  # the memory's rank in Retrieve's list (0 = best; 99 beyond it)
    mem_score: float  # the memory's score as a share of the best
    followed: bool  # a line of a range Recall followed (else of the passage search)
    line_no: int  # the line's number within its event
    dense: float | None  # the cosine of the passage the line was found in
    sparse: bool  # the lexical chunk search found its passage
    header: str = ""  # the structural line that names it (a diff's file, a tool's call)
    superseded: bool = False  # holds a value a newer memory replaced
    raw: float = 0.0  # its chunk's score as the raw-chunk search ranks (0: no search found it)
    raw_rank: int = 999  # its chunk's rank by that score (999: none)


def feature_rows(query: Query, pool: Sequence[Candidate], weights: dict[str, float],
                 dated: frozenset[str] = frozenset()) -> list[list[float]]:
    """One row of :data:`NAMES` per candidate. ``weights``: the question's term weights
    (rarity over the pool's lines); ``dated``: event ids said within the period the
    question names."""
    groups = TermGroups(query.text, weights)
    total = sum(weights.values()) or 1.0
    words = max(1, len(groups.terms))
    intent = query.intent
    asked = frozenset(groups.terms)
    order = {t: n for n, t in enumerate(groups.terms)}.__getitem__  # sums in question order

    def holding(*texts: str) -> list[str]:
        found = asked.intersection(*(line_terms(t) for t in texts[:1]))
        for t in texts[1:]:
            found |= asked & line_terms(t)
        return sorted(found, key=order)

    held = [holding(c.text) for c in pool]
    cov = [groups.weight(h) / total if h else 0.0 for h in held]
    best_cov = max(cov, default=0.0) or 1.0
    dense = [c.dense for c in pool if c.dense is not None]
    best_dense = max(dense, default=0.0)
    shapes = Counter(line_shape(c.text) for c in {c.text: c for c in pool}.values())
    near = _near(pool, cov)
    count = counts(intent.counted) if intent.counted else None
    asked_kinds = intent.kinds - {"command"}
    precise = query.precise  # once: the question's, not the line's
    counted = count is not None
    asked_failure, asked_command = intent.failure_asked, "command" in intent.kinds
    n_terms = math.log1p(len(groups.terms))
    at = INDEX
    rows = []
    for i, c in enumerate(pool):
        text = c.text[:MAX_LINE_CHARS]
        kinds, shape, command, failing = _text_part(c.text)
        row = [0.0] * len(NAMES)
        row[_SHAPE_FROM:_SHAPE_FROM + len(_SHAPE_NAMES)] = shape
        ctx = holding(c.text, c.header) if c.header else held[i]
        row[at["lex_cov"]] = cov[i]
        row[at["lex_cov_rel"]] = cov[i] / best_cov
        row[at["lex_words"]] = len(held[i]) / words
        row[at["lex_all_words"]] = float(len(held[i]) == len(groups.terms) > 0)
        row[at["lex_ctx"]] = groups.weight(ctx) / total if ctx else 0.0
        row[at["lex_rare"]] = max((weights.get(t, 0.0) for t in held[i]), default=0.0)
        row[at["lex_zero"]] = float(not held[i])
        if c.dense is not None:
            row[at["dense"]] = c.dense
            row[at["dense_rel"]] = c.dense - best_dense
            row[at["dense_has"]] = 1.0
        row[at["sparse_has"]] = float(c.sparse)
        row[at["raw_score"]] = c.raw
        row[at["raw_rank_inv"]] = 1.0 / (1.0 + c.raw_rank)
        row[at["raw_top8"]] = float(c.raw_rank < 8)
        row[at["kind_asked"]] = float(bool(asked_kinds & kinds))
        row[at["kind_any"]] = float(bool(kinds))
        row[at["command_asked"]] = float(asked_command and command)
        row[at["failure_asked"]] = float(asked_failure and failing)
        row[at["count_asked"]] = float(counted and count.search(text) is not None)  # type: ignore[union-attr]
        row[at["repeats_log"]] = math.log1p(shapes[line_shape(c.text)] - 1)
        row[at[f"kind_{c.kind}" if c.kind in KINDS else "kind_other"]] = 1.0
        row[at["role_user"]] = float(c.role == "user")
        row[at["role_assistant"]] = float(c.role == "assistant")
        row[at["mem_rank_inv"]] = 1.0 / (1.0 + c.mem_rank)
        row[at["mem_score_rel"]] = c.mem_score
        row[at["followed"]] = float(c.followed)
        row[at["line_pos_log"]] = math.log1p(c.line_no)
        row[at["first_line"]] = float(c.line_no == 0)
        row[at["near_lex"]] = near[i]
        row[at["superseded"]] = float(c.superseded)
        row[at["role_asked"]] = float(bool(intent.role) and c.role == intent.role)
        row[at["mine"]] = float(intent.first_person and c.role == "user")
        row[at["dated"]] = float(c.event_id in dated)
        row[at["q_precise_lex"]] = cov[i] if precise else 0.0
        row[at["q_precise_dense"]] = (c.dense or 0.0) if precise else 0.0
        row[at["q_kinds"]] = float(bool(intent.kinds))
        row[at["q_failure"]] = float(asked_failure)
        row[at["q_terms_log"]] = n_terms
        rows.append(row)
    return rows


#: the features a line's text alone decides (cached per text: lines recur across recalls)
_SHAPE_NAMES = ("is_command", "is_failure", "is_test_summary", "is_assignment",
                "is_diff_header", "is_added", "is_removed", "is_lookup", "is_decision",
                "is_code", "is_prose", "has_digit", "has_quote", "tokens_log", "terms_log")
_SHAPE_FROM = NAMES.index(_SHAPE_NAMES[0])
assert NAMES[_SHAPE_FROM:_SHAPE_FROM + len(_SHAPE_NAMES)] == _SHAPE_NAMES


@text_cache(32768)
def _text_part(full: str) -> tuple[frozenset[str], list[float], bool, bool]:
    """A line's typed value kinds, its shape features (:data:`_SHAPE_NAMES`), whether it
    is a shell command and whether a failure line."""
    text = full[:MAX_LINE_CHARS]
    command = SHELL_COMMAND.match(text) is not None
    failing = failure_line(text) or DIAGNOSTIC.match(text) is not None
    shape = [float(command), float(failing),
             float(_TEST_SUMMARY.search(text) is not None),
             float(_ASSIGNMENT.match(text) is not None),
             float(bool(DIFF_HEADER.match(text) or _PATH_HEADER.match(text))),
             float(text.startswith("+") and not text.startswith("+++")),
             float(text.startswith("-") and not text.startswith("---")),
             float(LOOKUP_ARGS.match(text) is not None),
             float(DECISION.search(text) is not None),
             float(_CODE.search(text) is not None),
             float(_PROSE.match(text) is not None),
             float(_NUMBER.search(text) is not None),
             float(_QUOTED.search(text) is not None),
             math.log1p(len(full) / 4), math.log1p(len(line_terms(full)))]
    return typed_kinds(full), shape, command, failing


def _near(pool: Sequence[Candidate], cov: list[float]) -> list[float]:
    """The best lexical coverage of the line just before or after (same event)."""
    out = [0.0] * len(pool)
    at = {(c.event_id, c.line_no): i for i, c in enumerate(pool)}
    for i, c in enumerate(pool):
        for step in (-1, 1):
            j = at.get((c.event_id, c.line_no + step))
            if j is not None:
                out[i] = max(out[i], cov[j])
    return out

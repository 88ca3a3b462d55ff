"""Semantic Extract: evidence lines chosen by meaning as well as by words.

Every stored passage (an event, or a line group of a long event: the ``chunks``
index, see :mod:`processors.chunker`) already carries a dense vector from ingest; no
second embedding is made. A recall gathers candidate passages from two places:

* the followed ranges (the chosen memories' own chunks, dense + lexical), and
* a direct passage search over the user's sources (same tenant / project / thread /
  status filter as the memory search), so an answering turn is found even where the
  memory ranking missed its range; such a line still names its range and memory.

Each line of a candidate passage is scored by fusing the passage's dense similarity
(min-max over the pool), the line's lexical coverage of the weighted question terms,
boosts for the value kinds / failures the question asks for, and the score of the
range (memory) it comes from. Lines are packed into the token budget greedily, each
pick preferring lines that cover question terms not covered yet over near-repeats of
lines already chosen. Text stays verbatim: every line is a slice of stored content.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

from breadcrumb.processors.decide import QueryIntent
from breadcrumb.processors.extract import Extract, Line, Passage, split_lines
from breadcrumb.processors.hints import VALUE_KINDS
from breadcrumb.processors.hints import holds_kind as text_holds_kind
from breadcrumb.processors.lexical import EN_STOPWORDS, lexical_terms, weighted_query
from breadcrumb.query_api.dated import dated_events
from breadcrumb.query_api.evidence import drop_superseded, events_by_id, evidence_record
from breadcrumb.query_api.scoring import Candidate, Query
from breadcrumb.query_api.speakers import named_speakers, speaker
from breadcrumb.stores.ports import (
    Hit,
    MemoryStore,
    RawEventStore,
    SearchFilter,
    VectorIndex,
)
from breadcrumb.stores.search_batch import SearchRequest, search_many

PASSAGE_POOL = 40  # direct passage search depth, per channel (dense, lexical)
RANGE_POOL = 8  # chunks per followed range, per channel
W_DENSE = 1.0
W_LEXICAL = 1.2
W_RANGE = 0.35
KIND_BOOST = 0.5  # a line holding a value of a kind the question asks for
FAILURE_BOOST = 0.5
ROLE_BOOST = 1.0  # a line of the speaker the question asks about ("what the user said")
DATE_BOOST = 0.8  # a line said within the period the question names ("in August 2023")
SPEAKER_BOOST = 0.2  # a transcript line spoken by a person the question names
KEEP_RATIO = 0.0  # share of the best fused score a line needs to be packed (0: fill the budget)
COVER_BONUS = 0.25  # per share of question weight a line covers that nothing chosen does
REPEAT_PENALTY = 0.3  # times the term overlap with the most similar chosen line
MAX_LINES = 40
#: what a line costs beyond its own count once joined under another line: a text's
#: count leaves out its first word's leading space, which a joined line pays
JOIN_TOKENS = 1
POOL_IDF = True
NEIGHBOR_SHARE = 0.5  # share of an adjacent turn's lead a line takes (question -> answer)
MAX_LINE_CHARS = 4000
_FAILURE = re.compile(r"(FAIL|ERROR|Error|Exception|Traceback|assert|panic|失敗|エラー)")
#: a compiler / linter diagnostic: ``path:line[:col]: message`` (Go, gcc, tsc, ruff ...)
_DIAGNOSTIC = re.compile(r"^\s*[\w./\\-]+:\d+(?::\d+)?:\s*\S")
_SHAPE_NOISE = re.compile(r"[\d\s]+")
# pure per-line work, cached: the lead and the packing both score a pool, lines recur
_shape = lru_cache(maxsize=32768)(partial(_SHAPE_NOISE.sub, ""))
_holds_kind = lru_cache(maxsize=32768)(text_holds_kind)
_LITERAL = re.compile(r"\w+_\w+|\w[\w-]*\.\w{1,5}\b|[\w-]+/[\w./-]+|\b[a-z]+[A-Z]\w*|`[^`]+`")


@dataclass(frozen=True, slots=True)
class Found:
    """A candidate passage with the scores its searches gave it."""

    passage: Passage
    memory_id: str
    dense: float | None = None  # cosine to the question
    sparse: float | None = None  # lexical channel score


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate line with its fused score and the memory (range) it belongs to."""

    line: Line
    memory_id: str
    terms: frozenset[str]


def direct_requests(flt: SearchFilter, dense: Sequence[float], text: str,
                    pool: int = PASSAGE_POOL) -> list[SearchRequest]:
    """The direct passage search over the user's sources: dense + lexical chunk searches."""
    return [SearchRequest("chunks", flt, pool, dense=dense),
            SearchRequest("chunks", flt, pool, sparse=weighted_query(text))]


def range_requests(user_id: str, memory_ids: Sequence[str], dense: Sequence[float],
                   text: str, per: int = RANGE_POOL) -> list[SearchRequest]:
    """Dense + lexical chunk searches restricted to each followed memory (two per memory)."""
    sparse = weighted_query(text)
    out = []
    for mid in memory_ids:  # the memory passed the status filter; its chunks follow it
        flt = SearchFilter(user_id=user_id, statuses=None, memory_ids=(mid,))
        out += [SearchRequest("chunks", flt, per, dense=dense),
                SearchRequest("chunks", flt, per, sparse=sparse)]
    return out


def merge(dense_lists: Iterable[list[Hit]], sparse_lists: Iterable[list[Hit]],
          into: dict[str, Found] | None = None) -> dict[str, Found]:
    """Chunk hits of several searches, one :class:`Found` per chunk id (a new dict)."""
    found: dict[str, Found] = dict(into or {})
    for hits, channel in [*((h, "dense") for h in dense_lists),
                          *((h, "sparse") for h in sparse_lists)]:
        for hit in hits:
            if "text" not in hit.payload:
                continue
            old = found.get(hit.id) or Found(_passage(hit.payload), str(hit.payload["memory_id"]))
            if channel == "dense":
                old = Found(old.passage, old.memory_id, max(hit.score, old.dense or -1.0),
                            old.sparse)
            else:
                old = Found(old.passage, old.memory_id, old.dense,
                            max(hit.score, old.sparse or 0.0))
            found[hit.id] = old
    return found


def _passage(payload: dict[str, object]) -> Passage:
    return Passage(str(payload["event_id"]), int(str(payload["event_index"])),
                   int(str(payload["char_start"])), str(payload["text"]))


def score_lines(found: Iterable[Found], terms: dict[str, float], intent: QueryIntent,
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
    roles = roles or {}
    found = list(found)
    cosines = [f.dense for f in found if f.dense is not None]
    hi, lo = (max(cosines), min(cosines)) if cosines else (1.0, 0.0)
    rows: list[tuple[Found, float, int, int, str, frozenset[str]]] = []
    seen: set[tuple[str, int]] = set()
    keep_removed = intent.temporal == "oldest"  # a diff's "-" lines are the replaced value
    for f in found:
        dense = 0.0 if f.dense is None else (1.0 if hi <= lo else (f.dense - lo) / (hi - lo))
        for start, end, text, line_terms in _lines(f.passage.text, f.passage.offset,
                                                   keep_removed):
            if (f.passage.event_id, start) in seen:
                continue
            seen.add((f.passage.event_id, start))
            rows.append((f, dense, start, end, text, line_terms))
    weights = pool_weights(terms, [r[5] for r in rows])
    named = named_speakers(question, (r[4] for r in rows)) if question else frozenset()
    total = sum(weights.values()) or 1.0
    out: list[tuple[float, Scored]] = []
    items = tuple(weights.items())
    for f, dense, start, end, text, line_terms in rows:
        lexical = (0.0 if line_terms.isdisjoint(weights)
                   else sum([w for t, w in items if t in line_terms]) / total)
        score = W_DENSE * dense + W_LEXICAL * lexical
        score += W_RANGE * range_score.get(f.memory_id, 0.0) + _boosts(text, intent)
        if intent.role and roles.get(f.passage.event_id) == intent.role:
            score += ROLE_BOOST
        if f.passage.event_id in dated:
            score += DATE_BOOST
        line = Line(f.passage.event_id, f.passage.event_index, start, end, text,
                    round(score, 6))
        out.append((score, Scored(line, f.memory_id, line_terms)))
    if NEIGHBOR_SHARE > 0:  # a turn next to a strong one (question → answer) shares in it
        out = _with_neighbors(out)
    shape = [_shape(s.line.text) for _sc, s in out]
    shapes = Counter(shape)
    out = [(sc / (1.0 + max(0, shapes[shape[i]] - 3))
            + (SPEAKER_BOOST if named and speaker(s.line.text) in named else 0.0), s)
           for i, (sc, s) in enumerate(out)]  # 40 lines of one shape: one of them is enough
    out.sort(key=lambda p: (-p[0], p[1].line.event_index, p[1].line.start))
    return out


_DIFF = re.compile(r"^(@@ -\d|--- a/|\+\+\+ b/)", re.M)


@lru_cache(maxsize=32768)
def _line_terms(text: str) -> frozenset[str]:
    """A line's question-comparable terms (cached: the lead and the packing both score a
    pool, and the same lines recur across questions)."""
    return frozenset(t for t in lexical_terms(text[:MAX_LINE_CHARS]) if t not in EN_STOPWORDS)


@lru_cache(maxsize=16384)
def _lines(text: str, offset: int, keep_removed: bool
           ) -> tuple[tuple[int, int, str, frozenset[str]], ...]:
    """(start, end, text, terms) of a passage's lines, a diff's removed lines left out
    unless kept; pure, so cached (the lead and the packing score the same passages)."""
    diff = not keep_removed and _DIFF.search(text) is not None
    return tuple((start, end, line, _line_terms(line))
                 for start, end, line in split_lines(Passage("", 0, offset, text))
                 if not (diff and _removed(line)))


def _removed(line: str) -> bool:
    return line.startswith("-") and not line.startswith("---")


def _with_neighbors(out: list[tuple[float, Scored]]) -> list[tuple[float, Scored]]:
    best: dict[tuple[str, int], float] = {}
    for score, s in out:
        key = (s.memory_id, s.line.event_index)
        best[key] = max(best.get(key, 0.0), score)
    lifted = []
    for score, s in out:
        idx = s.line.event_index
        near = max(best.get((s.memory_id, idx - 1), 0.0), best.get((s.memory_id, idx + 1), 0.0))
        lifted.append((max(score, score + NEIGHBOR_SHARE * (near - score)), s))
    return lifted


def pool_weights(terms: dict[str, float], lines: Sequence[frozenset[str]]) -> dict[str, float]:
    """Question term weights times their rarity among ``lines`` (1.0 when in one line)."""
    if not POOL_IDF or len(lines) < 2:
        return dict(terms)
    n = len(lines)
    norm = math.log(1.0 + n)
    out = {}
    for term, weight in terms.items():
        df = sum(1 for ln in lines if term in ln)
        out[term] = weight * (math.log(1.0 + n / df) / norm if df else 1.0)
    return out


def _boosts(text: str, intent: QueryIntent) -> float:
    boost = 0.0
    if intent.failure and _FAILURE.search(text):
        boost += FAILURE_BOOST
    if intent.kinds and _holds_kind(text[:MAX_LINE_CHARS], intent.kinds):
        boost += KIND_BOOST
    return boost


def pack(ranked: list[tuple[float, Scored]], terms: dict[str, float], budget: int,
         count: Callable[[str], int], max_lines: int = MAX_LINES) -> list[Scored]:
    """Lines within the budget, preferring new question terms over near-repeats.

    Greedy: each pick maximises ``score + COVER_BONUS * share of question weight not yet
    covered - REPEAT_PENALTY * overlap with the most similar chosen line``; the overlap
    of a candidate is brought up to date when it is looked at (lazy greedy).
    """
    if not ranked:
        return []
    best = ranked[0][0]
    pool = [(sc, s) for sc, s in ranked if sc >= best * KEEP_RATIO]
    total = sum(terms.values()) or 1.0
    repeat = [0.0] * len(pool)
    costs = [max(1, count(s.line.text)) for _sc, s in pool]
    # the question terms each line holds, in ``terms`` order (same sums as _new_weight)
    asked = [[(t, w) for t, w in terms.items() if t in s.terms] for _sc, s in pool]
    covered: set[str] = set()
    chosen: list[Scored] = []
    folded = [0] * len(pool)  # chosen lines already folded into repeat[i]

    def key(i: int) -> float:
        for c in chosen[folded[i]:]:
            repeat[i] = max(repeat[i], _overlap(pool[i][1].terms, c.terms))
        folded[i] = len(chosen)
        return (pool[i][0] - REPEAT_PENALTY * repeat[i]
                + COVER_BONUS * sum(w for t, w in asked[i] if t not in covered) / total)

    # Lazy greedy, same picks as a full max() over the pool each time (ties: lowest
    # index): a line's key only falls (repeat grows, coverage shrinks), so a stale key
    # is a bound; a popped line whose fresh key still heads the heap is the best.
    heap = [(-key(i), i) for i in range(len(pool)) if costs[i] <= budget]
    heapq.heapify(heap)
    used = 0
    while heap and len(chosen) < max_lines:
        _stale, i = heapq.heappop(heap)
        if used + costs[i] > budget:  # ``used`` only grows: it never fits again
            continue
        fresh = (-key(i), i)
        if heap and fresh > heap[0]:
            heapq.heappush(heap, fresh)
            continue
        cand = pool[i][1]
        chosen.append(cand)
        covered |= cand.terms & terms.keys()
        used += costs[i]
    return chosen


def joined_cost(count: Callable[[str], int]) -> Callable[[str], int]:
    """A line's cost inside a newline-joined evidence text (what ``token_cost`` counts)."""
    return lambda text: count(text) + JOIN_TOKENS


def _new_weight(line_terms: frozenset[str], terms: dict[str, float], covered: set[str]) -> float:
    return sum(w for t, w in terms.items() if t in line_terms and t not in covered)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    common = len(a & b)  # |a ∪ b| = |a| + |b| - |a ∩ b|: one set built, not two
    return common / (len(a) + len(b) - common)


@dataclass(frozen=True, slots=True)
class Ports:
    """What semantic extraction reads: the index, the memory rows and the raw events."""

    index: VectorIndex
    memories: MemoryStore
    raw: RawEventStore
    count: Callable[[str], int]


def semantic_evidence(ports: Ports, user_id: str, query: Query, top: list[Candidate],
                      hops: list[Candidate], found: dict[str, Found], budget: int,
                      include_superseded: bool, reason: str) -> list[dict[str, Any]]:
    """Evidence records from the followed ranges and the direct passage search."""
    requests = range_requests(user_id, [c.memory.id for c in hops], query.dense, query.text)
    results = search_many(ports.index, requests)
    pool = merge(results[0::2], results[1::2], into=found)
    best = top[0].score if top and top[0].score > 0 else 1.0
    range_score = {c.memory.id: max(0.0, c.score / best) for c in top}
    roles = _roles(ports.raw, user_id, pool.values()) if query.intent.role else None
    dated = dated_events(ports.raw, user_id, query.text,
                         (f.passage.event_id for f in pool.values()))
    ranked = score_lines(pool.values(), query.terms, query.intent, range_score, roles, dated,
                         query.text)
    chosen = pack(ranked, query.terms, budget, joined_cost(ports.count))
    known = {c.memory.id: c.memory for c in top}
    missing = [mid for mid in dict.fromkeys(s.memory_id for s in chosen) if mid not in known]
    known.update({m.id: m for m in ports.memories.get_memories(user_id, missing)})
    groups: dict[str, list[Line]] = {}
    for s in chosen:  # in pick order: the group of the best line comes first
        if s.memory_id in known:  # indexed but not stored: never guess
            groups.setdefault(s.memory_id, []).append(s.line)
    out = []
    for mid, lines in groups.items():
        memory = known[mid]
        lines.sort(key=lambda ln: (ln.event_index, ln.start))
        cut = Extract(tuple(lines), ports.count("\n".join(ln.text for ln in lines)),
                      max(ln.score for ln in lines))
        cut, stale = drop_superseded(cut, memory, include_superseded, ports.count)
        if not cut.lines:
            continue
        how = "followed range" if mid in {c.memory.id for c in hops} else "passage search"
        rng = memory.source_range
        item = evidence_record(mid, rng.thread_id, rng.start_index, rng.end_index, cut,
                               f"{reason}; level 1; semantic ({how}); {len(cut.lines)} "
                               f"line(s), {cut.tokens} tokens")
        if stale:
            item["superseded_values"] = stale
        out.append(item)
    return out


def _roles(raw: RawEventStore, user_id: str, found: Iterable[Found]) -> dict[str, str]:
    """Event id -> role of the candidate passages' events (asked only for speaker questions)."""
    events = events_by_id(raw, user_id, [f.passage.event_id for f in found])
    return {eid: e.role for eid, e in events.items()}


def holds_kind(evidence: list[dict[str, Any]], intent: QueryIntent) -> bool:
    """Whether some evidence line holds a value of a kind the question asks for (or
    the question asks for no kind): a word-exact cut without one missed the value."""
    kinds = intent.kinds & VALUE_KINDS  # a kind no rule names cannot be checked
    failure = intent.failure or "error" in intent.kinds
    if not kinds and not failure:
        return True
    for item in evidence:
        for ln in item["lines"]:
            text = str(ln["text"])[:MAX_LINE_CHARS]
            if failure and (_FAILURE.search(text) or _DIAGNOSTIC.match(text)):
                return True  # a failure line the typed-value rules do not name (Go, tsc ...)
            if kinds and text_holds_kind(text, kinds):
                return True
    return False


def needs_meaning(evidence: list[dict[str, Any]], query: Query) -> bool:
    """Whether lines chosen by meaning should replace the word-exact cut: it found
    nothing, the question is not a precise lookup, or it missed the asked value kind."""
    return (not evidence or not precise(query.intent, query.text)
            or not holds_kind(evidence, query.intent))


def with_timestamps(raw: RawEventStore, user_id: str, evidence: list[dict[str, Any]]
                    ) -> list[dict[str, Any]]:
    """Add ``ts`` (first matched event) and ``event_ts`` (every matched event) to each item."""
    events = events_by_id(raw, user_id, [i for it in evidence for i in it["matched_event_ids"]])
    for item in evidence:
        stamps = {eid: events[eid].ts for eid in item["matched_event_ids"] if eid in events}
        item["ts"] = next(iter(stamps.values()), None)
        item["event_ts"] = stamps
    return evidence


def passage_lead(found: dict[str, Found], query: Query) -> dict[str, float]:
    """Memory id -> its best line's fused score as a share of the best line's (0..1)."""
    best: dict[str, float] = {}
    for score, s in score_lines(found.values(), query.terms, query.intent, {}):
        best[s.memory_id] = max(best.get(s.memory_id, 0.0), score)
    top = max(best.values(), default=0.0)
    return {mid: v / top for mid, v in best.items()} if top > 0 else {}


def precise(intent: QueryIntent, text: str = "") -> bool:
    """A question for a typed value, a failure, a named literal (``DB_PORT``,
    ``validate-email.ts``, ``retryCount``) or the current value ("… now?") keeps the
    word-exact cut: its one line, the newest version first."""
    if intent.role:  # "what the user said": a speaker's turn, found by meaning
        return False
    return (bool(intent.kinds) or intent.failure or intent.temporal == "newest"
            or bool(_LITERAL.search(text)))

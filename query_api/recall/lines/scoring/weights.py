"""The line scorers' shared parts: one weights object (:class:`LineWeights`, one instance
per caller), a line's terms and shape, and question term weights by rarity."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from breadcrumb.processors.hints import holds_kind as text_holds_kind
from breadcrumb.processors.lexical import (
    EN_STOPWORDS,
    lexical_terms,
)
from breadcrumb.processors.text_cache import text_cache
from breadcrumb.query_api.recall.lines.shapes import (
    MAX_LINE_CHARS,
)


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

_SHAPE_NOISE = re.compile(r"[\d\s]+")
# pure per-line work, cached: the lead and the packing both score a pool, lines recur
# (text_cache: lines up to 1,024 characters, so the caches' size does not follow the data)
line_shape = text_cache(32768)(partial(_SHAPE_NOISE.sub, ""))
holds_kind_cached = text_cache(32768)(text_holds_kind)


@text_cache(32768)
def line_terms(text: str) -> frozenset[str]:
    """A line's question-comparable terms (cached: the lead and the packing both score a
    pool, and the same lines recur across questions)."""
    return frozenset(t for t in lexical_terms(text[:MAX_LINE_CHARS]) if t not in EN_STOPWORDS)


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


"""What a near miss looks like: one specific question word that no evidence line holds.

LongMemEval's abstentions ask about something the history nearly holds — "what did I bake
for my *uncle's* birthday party?" over a history holding the niece's, "my *hamster*" over
one holding a cat. Their best lines hold most of the question's words and are as close by
meaning as a real answer's; what sets them apart is the word they lack. These are plain
measurements of that (no hand-set weight: the relevance model learns whether and how much
each counts, :mod:`.relevance`), read from what the candidate pool already holds:

* ``miss_pool_n`` / ``miss_pool_share``: the question words no candidate line holds (the
  pool holds the lines the lexical chunk search found, so a rare word the tenant says
  anywhere is usually in it), their number and share;
* ``top_union_words``: the share of the question words the best-covering lines hold
  together (:data:`TOP_LINES` lines by lexical coverage, then by cosine);
* ``top_miss_max``: the rarity (over the pool's lines, :func:`pool_weights`'s scale, 1.0 for
  a word no line holds) of the rarest question word those lines lack;
* ``miss_cap``: a capitalised question word (a name: "Sacramento", "Manager"), not the
  first, that no candidate line holds;
* ``miss_slot``: a substitution — two adjacent question words, one held by a best line and
  the other not, where that line has another word in the missing one's place ("uncle's
  birthday" / "niece's birthday", "vintage films" / "vintage cameras").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from breadcrumb.processors.lexical import EN_STOPWORDS, lexical_terms, query_terms, with_verb_forms

#: the measurements :func:`near_miss` returns, in order
NEAR_MISS = ("miss_pool_n", "miss_pool_share", "top_union_words", "top_miss_max", "miss_cap",
             "miss_slot")
#: how many lines count as the best-covering ones
TOP_LINES = 5
#: a word in this share of the training questions frames questions (:func:`framing_words`)
FRAMING_SHARE = 0.04


def _word(term: str) -> bool:
    """A question word worth missing: not a stopword, not a one-letter piece."""
    return len(term) > 1 and term not in EN_STOPWORDS


@lru_cache(maxsize=4096)
def _sequence(text: str) -> tuple[str, ...]:
    """A text's lexical terms in order (stopwords kept: they break adjacency)."""
    return tuple(t for t in lexical_terms(text) if len(t) > 1)


@lru_cache(maxsize=1024)
def _forms(word: str) -> frozenset[str]:
    """A question word and the forms a line may hold it in (stem, verb forms)."""
    return frozenset({word, *with_verb_forms(query_terms(word))})


def _stem(word: str) -> str:
    """The prefix a line's word shares with a question word's inflections ("bake" /
    "baked", "engineers" / "engineer"): all but its last two letters, at least four."""
    return word[:max(4, len(word) - 2)]


class _Held:
    """Whether a set of line terms holds a question word, in any of its forms."""

    __slots__ = ("terms", "stems")

    def __init__(self, terms: frozenset[str]) -> None:
        self.terms = terms
        self.stems: dict[int, frozenset[str]] = {}

    def __call__(self, word: str) -> bool:
        if _forms(word) & self.terms:
            return True
        stem = _stem(word)
        n = len(stem)
        if n not in self.stems:
            self.stems[n] = frozenset(t[:n] for t in self.terms if len(t) <= len(word) + 3)
        return stem in self.stems[n]


def framing_words(questions: Iterable[str], share: float = FRAMING_SHARE) -> list[str]:
    """The words that frame questions rather than name what is asked ("how *many*", "our
    *previous conversation*", "*remind* me"): those in at least ``share`` of
    ``questions`` (and in three of them at least), sorted. Learned from the training
    questions' texts (no label read) and kept in the relevance model's file."""
    texts = list(questions)
    seen = Counter(w for q in texts for w in {t for t in _sequence(q) if _word(t)})
    least = max(3.0, share * len(texts))
    return sorted(w for w, n in seen.items() if n >= least)


def near_miss(question: str, weights: dict[str, float], texts: Sequence[str],
              line_terms: Sequence[frozenset[str]], order: Sequence[int],
              framing: frozenset[str] = frozenset()) -> list[float]:
    """The :data:`NEAR_MISS` measurements of a question over candidate lines: ``texts``
    and their terms ``line_terms``, ``order`` the line indices best-covering first, and
    ``weights`` the question terms' weights with their rarity among the lines. The
    ``framing`` words (:func:`framing_words`) are not counted as question words."""
    seq = _sequence(question)
    words = list(dict.fromkeys(t for t in seq if _word(t) and t not in framing))
    if not words:
        return [0.0] * len(NEAR_MISS)
    pool = frozenset().union(*line_terms) if line_terms else frozenset()
    top = [i for i in order[:TOP_LINES]]
    top_terms = frozenset().union(*(line_terms[i] for i in top)) if top else frozenset()
    in_pool, in_top = _Held(pool), _Held(top_terms)
    missing = [w for w in words if not in_pool(w)]
    top_missing = [w for w in words if not in_top(w)]
    best = max(weights.values(), default=1.0) or 1.0
    rarity = max((max((weights.get(f, 0.0) for f in _forms(w)), default=0.0) / best
                  for w in top_missing), default=0.0)
    capital = {t.lower().strip(".,;:!?'\"()") for t in question.split()[1:] if t[:1].isupper()}
    caps = any(w in capital or any(c.startswith(w) for c in capital) for w in missing)
    return [float(len(missing)), len(missing) / len(words),
            1.0 - len(top_missing) / len(words), rarity, float(caps),
            float(_slot(seq, set(words), frozenset(top_missing), [texts[i] for i in top]))]


def _slot(seq: Sequence[str], words: set[str], missing: frozenset[str],
          texts: Sequence[str]) -> bool:
    """Whether a best line puts another word where the question has one it lacks, beside
    a question word it holds (:data:`NEAR_MISS`'s ``miss_slot``)."""
    pairs = []
    for a, b in zip(seq, seq[1:], strict=False):
        if a in words and b in words and (a in missing) != (b in missing):
            pairs.append((b, -1) if a in missing else (a, 1))  # (held word, slot side)
    if not pairs:
        return False
    for text in texts:
        line = _sequence(text)
        for held, side in pairs:
            for n, t in enumerate(line):
                if t not in _forms(held) and not t.startswith(_stem(held)):
                    continue
                k = n + side
                if 0 <= k < len(line) and _word(line[k]) and line[k].isalpha() \
                        and line[k] not in words:
                    return True
    return False

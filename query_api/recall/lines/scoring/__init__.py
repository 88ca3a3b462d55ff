"""Recall's line scoring, one package: every line recall offers is scored here (Extract's
cuts, and Retrieve's passage lead: :func:`passage_lead`).

Two scorers share one weights object (:class:`LineWeights`, :mod:`.weights`), one
instance per caller:

* :func:`score_exact` (:data:`EXACT`, :mod:`.exact`) — the word-exact cut: the weighted
  query terms a line holds (stopwords and particles dropped,
  :func:`processors.lexical.query_terms`), plus boosts for holding the *kind* of exact
  value the question asks for (regex, port, SQL, ...;
  :func:`processors.hints.extract_typed_values`), failure lines on failure questions,
  lines a file edit added, and decisions. Lines that repeat one shape many times (2,000
  ``PASSED`` lines) are damped, a long line's term weight shrinks with its length, a tool
  call's lookup arguments keep half their score, and an error's detail line takes its
  header's score.
* :func:`score_semantic` (:data:`SEMANTIC`, :mod:`.pool`) — lines by meaning: the passage's dense
  similarity (min-max over the pool), the line's lexical coverage of the question terms
  (each weighted by its rarity among the pool's lines), the kind / failure boosts, the
  score of the range (memory) it comes from, the role, date (:mod:`..extract.dated`) and
  speaker (:mod:`..speakers`) boosts, and the word-exact cut's tool lines' lift
  (``words``); a turn next to a strong one takes a share of its lead, lines of one
  repeated shape are damped. It works on plain per-line columns
  (:class:`LinePool`) and builds a :class:`Line` only for a line that is returned.

Quoting (level 3) scores nothing: a quoted line keeps the score it is given.
"""

from __future__ import annotations

from breadcrumb.query_api.recall.lines.scoring.exact import exact_weights, score_exact
from breadcrumb.query_api.recall.lines.scoring.pool import (
    LinePool,
    Scored,
    line_pool,
    passage_lead,
    score_semantic,
)
from breadcrumb.query_api.recall.lines.scoring.weights import (
    DATE_BOOST,
    EXACT,
    SEMANTIC,
    SPEAKER_BOOST,
    LineWeights,
    pool_weights,
)

__all__ = ["DATE_BOOST", "EXACT", "SEMANTIC", "SPEAKER_BOOST", "LinePool", "LineWeights",
           "Scored", "exact_weights", "line_pool", "passage_lead", "pool_weights",
           "score_exact", "score_semantic"]

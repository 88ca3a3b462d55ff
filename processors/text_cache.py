"""Caches of pure per-text work whose memory does not depend on the texts stored (issue 49).

Recall scores the same lines again and again (the lead and the packing score one pool, the
same memories come back across questions), so the per-line work is cached. An ``lru_cache``
bounds its entries, not its bytes: each entry holds its key, and a line of a minified
bundle or a one-line JSON dump can be 100 KB long, so 32,768 entries of such lines could
hold gigabytes. :func:`text_cache` keeps the entry bound and caches only texts of at most
``max_chars`` characters; a longer text is computed each time (rare, and its work is
bounded by the callee's own cut, e.g. ``processors.shell.MAX_LINE_CHARS``). A cache's keys
then take at most ``maxsize * max_chars`` characters whatever the data.

Pure functions only: the answer is the same cached or not.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, update_wrapper
from typing import Any, Generic, TypeVar

R = TypeVar("R")

#: the longest text a cache keeps (longer ones are computed each time)
TEXT_CACHE_CHARS = 1024


class TextCache(Generic[R]):
    """``fn(text, *args)`` cached for texts of at most ``max_chars`` characters."""

    def __init__(self, fn: Callable[..., R], maxsize: int, max_chars: int) -> None:
        self.fn = fn
        self.cached: Callable[..., R] = lru_cache(maxsize=maxsize)(fn)
        self.max_chars = max_chars
        try:
            update_wrapper(self, fn)
        except AttributeError:  # a functools.partial has no __name__
            pass

    def __call__(self, text: str, *args: Any) -> R:
        if len(text) > self.max_chars:
            return self.fn(text, *args)
        return self.cached(text, *args)

    def cache_info(self) -> Any:
        """The entry cache's ``cache_info()``."""
        return self.cached.cache_info()  # type: ignore[attr-defined]

    def cache_clear(self) -> None:
        """Empty the cache."""
        self.cached.cache_clear()  # type: ignore[attr-defined]


def text_cache(maxsize: int, max_chars: int = TEXT_CACHE_CHARS
               ) -> Callable[[Callable[..., R]], TextCache[R]]:
    """Decorator: :class:`TextCache` of ``maxsize`` entries over texts up to ``max_chars``."""
    def wrap(fn: Callable[..., R]) -> TextCache[R]:
        return TextCache(fn, maxsize, max_chars)
    return wrap

"""``processors.text_cache`` (issue 49): pure per-text work cached for short texts only, so
a cache's size does not follow the lengths of the lines stored; the answer is the same
cached or not, and a forget can empty it."""

from __future__ import annotations

from functools import partial

from breadcrumb.processors.text_cache import TEXT_CACHE_CHARS, TextCache, text_cache


def test_short_texts_are_cached_long_ones_computed_each_time() -> None:
    calls: list[str] = []

    @text_cache(8)
    def length(text: str, extra: int = 0) -> int:
        calls.append(text)
        return len(text) + extra

    short, long = "x" * TEXT_CACHE_CHARS, "y" * (TEXT_CACHE_CHARS + 1)
    assert [length(short), length(short), length(long), length(long)] == \
        [TEXT_CACHE_CHARS, TEXT_CACHE_CHARS, TEXT_CACHE_CHARS + 1, TEXT_CACHE_CHARS + 1]
    assert calls == [short, long, long]
    assert length(short, 2) == TEXT_CACHE_CHARS + 2  # further arguments are part of the key
    assert length.cache_info().currsize == 2
    for n in range(20):
        length(str(n))
    assert length.cache_info().currsize == 8  # the entry bound holds
    length.cache_clear()
    assert length.cache_info().currsize == 0
    assert length.__name__ == "length"


def test_a_partial_can_be_cached() -> None:
    strip = TextCache(partial(str.replace, "a-b", "-"), 4, 16)
    assert strip("") == "a-b".replace("-", "")


def test_the_recall_caches_are_text_caches_a_forget_empties() -> None:
    from types import SimpleNamespace

    from breadcrumb.query_api.recall.lines.scoring import weights
    from breadcrumb.query_api.routes.forget import _empty_caches

    assert isinstance(weights.line_terms, TextCache)
    weights.line_terms("pytest -q tests/test_auth.py")
    recall = SimpleNamespace(count_tokens=TextCache(len, 4, 16))
    recall.count_tokens("an erased line")
    assert weights.line_terms.cache_info().currsize >= 1
    _empty_caches(SimpleNamespace(raw=None, recall=recall), [])  # type: ignore[arg-type]
    assert weights.line_terms.cache_info().currsize == 0
    assert recall.count_tokens.cache_info().currsize == 0

"""Identical query texts reuse their vector (issue 14, item 8)."""

from __future__ import annotations

from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.embedders.query_cache import QueryVectorCache, cache_for, query_vector


class Counting(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def embed_query(self, text: str) -> list[float]:
        self.calls.append(text)
        return super().embed_query(text)


def test_a_repeated_text_is_embedded_once_and_gets_the_same_vector() -> None:
    emb = Counting()
    first = query_vector(emb, "which port does the db use")
    first[0] = 99.0  # a caller mutating its copy changes nothing cached
    again = query_vector(emb, "which port does the db use")
    assert emb.calls == ["which port does the db use"]
    assert again == HashEmbedder().embed_query("which port does the db use")
    assert query_vector(emb, "which port does redis use") != again  # other text, embedded
    assert len(emb.calls) == 2 and cache_for(emb).hits == 1


def test_least_recently_used_texts_are_evicted_and_embedders_do_not_share() -> None:
    emb = Counting()
    cache = QueryVectorCache(emb, size=2)
    cache.get("a")
    cache.get("b")
    cache.get("a")  # a is now the most recent
    cache.get("c")  # evicts b
    cache.get("a")
    cache.get("b")
    assert emb.calls == ["a", "b", "c", "b"]
    other = Counting()
    query_vector(other, "a")
    assert other.calls == ["a"]  # one cache per embedder instance

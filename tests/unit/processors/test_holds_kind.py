"""holds_kind: the same answer as extract_typed_values, for every kind and text."""

from __future__ import annotations

import itertools

from breadcrumb.processors.hints import extract_typed_values, holds_kind

TEXTS = [
    "DB_PORT=5432 in .env", "listen on port 8080", "ポート番号は 6543", "see https://x.io/a",
    "POST /v1/recall returns 200", "SELECT id FROM orders WHERE paid = 1;",
    "FAILED tests/test_x.py::test_y - AssertionError: boom", "0 3 * * * sync.sh",
    "image redis:7.2-alpine", "const re = /^[\\w.+-]+@\\w+\\.\\w+$/", "arXiv:2401.01234",
    "plain words with nothing typed", "validateEmail() in src/validate-email.ts", "",
    "set `retry_count` to 'three'", "commit 3f2a9bc1 on v1.2.3", "「設定値」は --max-age=10",
]
KINDS = sorted({k for t in TEXTS for k, _v in extract_typed_values(t)} | {"command", "sql"})


def test_holds_kind_agrees_with_extraction() -> None:
    for text in TEXTS:
        found = {k for k, _v in extract_typed_values(text)}
        for size in (1, 2):
            for kinds in itertools.combinations(KINDS, size):
                assert holds_kind(text, frozenset(kinds)) == bool(found & set(kinds)), (text, kinds)
    assert not holds_kind("DB_PORT=5432", frozenset())


def test_holds_kind_on_a_long_log_scans_like_extraction() -> None:
    log = "\n".join([f"ok line {i}" for i in range(400)] + ["ECONNREFUSED 127.0.0.1:5432"]
                    + [f"ok {i}" for i in range(20)])
    assert holds_kind(log, frozenset({"error"})) == any(
        k == "error" for k, _v in extract_typed_values(log))
    assert holds_kind(log, frozenset({"error"}))

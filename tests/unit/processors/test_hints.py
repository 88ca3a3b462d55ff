"""hints: exact values (verbatim), phrases and language detection."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from breadcrumb.eval.corpus import PLANTED, big_pytest_log, golden_events
from breadcrumb.processors.hints import (
    extract_exact_values,
    extract_typed_values,
    scan_segments,
)
from breadcrumb.processors.phrases import detect_language, extract_phrases

EVENTS = {e["event_id"]: e for e in golden_events()}

SPEC_EXAMPLES = [
    ("Fix validateEmail in UserService", ["validateEmail", "UserService"]),
    ("rename user_id and MAX_RETRIES", ["user_id", "MAX_RETRIES"]),
    ("edit src/auth/validate-email.ts now", ["src/auth/validate-email.ts"]),
    ("run ./x.py and read /etc/nginx.conf and tests/test_x.py", ["./x.py", "/etc/nginx.conf",
                                                                "tests/test_x.py"]),
    ("served from example.co.jp", ["example.co.jp"]),
    ("call POST /v1/events or GET /api/users/{id}", ["POST /v1/events", "/v1/events",
                                                     "/api/users/{id}"]),
    ("AUTH_ALLOWED_DOMAINS=example.com,corp.example", [
        "AUTH_ALLOWED_DOMAINS=example.com,corp.example", "AUTH_ALLOWED_DOMAINS"]),
    ("CREATE TABLE users (id BIGINT PRIMARY KEY, email TEXT NOT NULL);",
     ["CREATE TABLE users (id BIGINT PRIMARY KEY, email TEXT NOT NULL);", "users", "email"]),
    ("ALTER TABLE users ADD COLUMN last_login TIMESTAMPTZ;", ["users", "last_login"]),
    ("INSERT INTO audit_log (actor, action) VALUES ('a', 'b');", ["audit_log"]),
    ("const EMAIL_RE = /^[^@\\s]+@[^@\\s]+$/i;", ["/^[^@\\s]+@[^@\\s]+$/i", "EMAIL_RE"]),
    ('pat = re.compile(r"^\\d{3}-\\d{4}$")', ['r"^\\d{3}-\\d{4}$"', "^\\d{3}-\\d{4}$"]),
    ('new RegExp("^[a-z]+$", "i")', ['new RegExp("^[a-z]+$", "i")', "^[a-z]+$"]),
    ("postgres on port 5432, api on :8080, PORT=3000", ["port 5432", "5432", ":8080", "8080",
                                                       "PORT=3000"]),
    ("v1.2.3 on python 3.11 with postgres:16-alpine and redis:7.2",
     ["v1.2.3", "3.11", "postgres:16-alpine", "redis:7.2"]),
    ("connect ECONNREFUSED, then E11000 and HTTP 502", ["ECONNREFUSED", "E11000", "HTTP 502"]),
    ("Uncaught TypeError: x is not a function\n", ["TypeError: x is not a function"]),
    ("Traceback (most recent call last):\n  File \"a.py\", line 1\nKeyError: 'user'\n",
     ["KeyError: 'user'"]),
    ("schedule */5 * * * * please", ["*/5 * * * *"]),
    ("see arXiv:2401.12345v2 and 2310.06825.", ["arXiv:2401.12345v2", "2310.06825"]),
    ('timeout: "30s"\nmode: strict\n', ["30s", "strict"]),
    ("EMAIL_REを更新、ポート 6432 に変更", ["EMAIL_RE", "ポート 6432", "6432"]),
]


@pytest.mark.parametrize(("text", "expected"), SPEC_EXAMPLES)
def test_spec_examples_are_extracted(text: str, expected: list[str]) -> None:
    values = extract_exact_values(text)
    for value in expected:
        assert value in values, (value, values)


@pytest.mark.parametrize("planted", PLANTED, ids=[p["value"][:30] for p in PLANTED])
def test_every_planted_value_is_caught_verbatim(planted: dict[str, str]) -> None:
    content = EVENTS[planted["event_id"]]["content"]
    assert planted["value"] in content
    assert planted["value"] in extract_exact_values(content)


def test_every_value_is_a_substring_of_its_text() -> None:
    for event in EVENTS.values():
        for value in extract_exact_values(event["content"]):
            assert value in event["content"]


ALPHABET = list("aZ_/.:=@-* 0123\n\"'`$^[]()認証ポート")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(ALPHABET), max_size=200))
def test_values_are_substrings_for_any_text(text: str) -> None:
    values = extract_exact_values(text)
    assert len(values) == len(set(values))
    assert all(v and v in text for v in values)


def test_first_seen_order() -> None:
    values = extract_exact_values("edit b_file then a_file then b_file")
    assert values.index("b_file") < values.index("a_file")


def test_sql_in_prose_is_not_sql() -> None:
    kinds = dict((v, k) for k, v in extract_typed_values("select a file from the list"))
    assert "sql" not in kinds.values()


def test_huge_output_keeps_the_failing_line_and_is_fast() -> None:
    log = big_pytest_log()
    start = time.perf_counter()
    values = extract_exact_values(log)
    elapsed = time.perf_counter() - start
    assert "tests/test_checkout.py::test_apply_coupon_rounding" in values
    assert "tests/test_cart.py::test_cart_case_1001" not in values  # middle PASSED lines skipped
    assert elapsed < 1.0
    pieces = scan_segments(log)
    assert all(log[off:off + len(piece)] == piece for off, piece in pieces)


def test_japanese_phrases() -> None:
    text = "認証のメールアドレス正規表現をもう一回出して。メールアドレスの検証が必要。"
    phrases = extract_phrases(text, "ja")
    for word in ("認証", "メールアドレス", "正規表現"):
        assert word in phrases
    assert "必要" not in phrases


def test_english_phrases() -> None:
    text = ("Please fix the email validation regex. Then add a rate limit to checkout; "
            "the rate limit should be per user.")
    phrases = extract_phrases(text, "en")
    assert "email validation" in phrases
    assert "rate limit" in phrases
    assert "the" not in phrases and "please" not in phrases
    assert len(phrases) <= 12


def test_phrases_are_deterministic() -> None:
    text = EVENTS["u1-auth-email-regex-v2-000"]["content"]
    assert extract_phrases(text, "ja") == extract_phrases(text, "ja")


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("認証のメールアドレス正規表現をもう一回出して", "ja"),
        ("src/auth/validate-email.ts の EMAIL_RE を更新しました", "ja"),
        ("Please fix the email validation", "en"),
        ("修复认证问题", "zh"),
        ("인증 문제를 고쳐 주세요", "ko"),
        ("Исправь проверку почты", "ru"),
        ("", "en"),
    ],
)
def test_detect_language(text: str, lang: str) -> None:
    assert detect_language(text) == lang


# ---- the literal gates and the cache change nothing -------------------------------------
_GATE_ALPHABET = list("aeprtoEFHIL_-./:@=`'\"*( )1234567890\n\t") + [
    "port", "PoRt", "ポート", "Error", "FAILED", "panic: ", "http://", "re.compile(r'",
    "new RegExp(", "Bad Gateway", "404 Not Found", "--- a/", "+++ b/", "Dockerfile", ".env",
    "::", "@daily", "arXiv:", "2401.12345", "*/5 * * * *", "-p 8080:80", "E  ", "HTTP/1.1 ",
    "「値」", "x.py", "snake_case", "CONST_NAME", "kebab-case", "--flag=1", "camelCase",
]


@given(st.lists(st.sampled_from(_GATE_ALPHABET), max_size=40).map("".join))
def test_literal_gates_give_the_values_of_every_pattern(text: str) -> None:
    import dataclasses

    from breadcrumb.processors import hints

    gated = hints._typed_values(text, hints.MAX_SCAN_LINES)
    ungated_rules = tuple(dataclasses.replace(r, needs=()) for r in hints._RULES)
    saved = hints._RULES
    try:
        hints._RULES = ungated_rules
        plain = hints._typed_values(text, hints.MAX_SCAN_LINES)
    finally:
        hints._RULES = saved
    assert gated == plain
    assert extract_typed_values(text) == plain == extract_typed_values(text)  # cached copy

"""estimate_tokens: CJK vs ASCII sanity, never zero, fast."""

from __future__ import annotations

import re
import time

from hypothesis import given
from hypothesis import strategies as st

from breadcrumb.processors.tokens import _CJK_CLASS, estimate_tokens

_REF_CJK = re.compile(f"[{_CJK_CLASS}]")
_REF_WORD = re.compile(f"[^\\W{_CJK_CLASS}]+")
_REF_SYMBOL = re.compile(r"[^\w\s]")


def reference_estimate(text: str) -> int:
    """The documented rule, written the plain way (one run at a time)."""
    if not text:
        return 0
    words = sum((len(run) + 3) // 4 for run in _REF_WORD.findall(text))
    return max(1, len(_REF_CJK.findall(text)) + len(_REF_SYMBOL.findall(text)) + words)


def test_empty_is_zero() -> None:
    assert estimate_tokens("") == 0


def test_cjk_counts_one_token_per_character() -> None:
    assert estimate_tokens("你好世界") == 4
    assert estimate_tokens("こんにちは") == 5  # hiragana
    assert estimate_tokens("カタカナ") == 4  # katakana
    assert estimate_tokens("안녕하세요") == 5  # hangul
    assert estimate_tokens("中" * 100) == 100


def test_ascii_words_count_about_one_token_per_four_chars() -> None:
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("a b c") == 3  # every word-piece costs at least one
    text = " ".join(["authentication", "domain", "allowed", "regex", "tests"] * 20)
    assert 0.2 * len(text) <= estimate_tokens(text) <= 0.35 * len(text)


def test_cjk_costs_more_per_character_than_ascii() -> None:
    assert estimate_tokens("日本語のテキスト" * 10) > 3 * estimate_tokens("japanese" * 10)


def test_symbols_count_and_whitespace_does_not() -> None:
    assert estimate_tokens("a.b") == 3
    assert estimate_tokens("==") == 2
    assert estimate_tokens("abc   \n\t  abc") == 2
    assert estimate_tokens("   ") == 1  # non-empty is never 0
    assert estimate_tokens("\n") == 1


def test_mixed_script() -> None:
    # "EMAIL_RE" is one word run of 8 chars (2 tokens), "=" 1, "正则" 2.
    assert estimate_tokens("EMAIL_RE = 正则") == 5


@given(st.text(min_size=1))
def test_never_zero_for_non_empty_text(text: str) -> None:
    assert estimate_tokens(text) >= 1


@given(st.text(), st.text())
def test_concatenation_at_a_line_break_is_roughly_additive(a: str, b: str) -> None:
    whole = estimate_tokens(a + "\n" + b)
    assert whole <= estimate_tokens(a) + estimate_tokens(b) + 1


def test_fast_on_a_large_tool_output() -> None:
    text = "\n".join(
        f"2024-05-01T12:00:{i % 60:02d} INFO worker[{i}] ok path=/src/a.py" for i in range(2000)
    )
    text += "\n" + "日本語" * 2000
    started = time.perf_counter()
    for _ in range(10):
        tokens = estimate_tokens(text)
    elapsed = (time.perf_counter() - started) / 10
    assert tokens > 6000
    assert elapsed < 0.25, f"estimate_tokens took {elapsed:.3f}s on {len(text)} chars"


_ASCII_MIX = st.text(alphabet=st.sampled_from(
    list("ab_Z09 .-/:;()[]{}\"'`=@#!?~") + ["\t", "\n", "\x0b", "\x0c", "\r", "\x1c",
                                           "\x1f", "\x00", "\x7f"]), max_size=80)


@given(_ASCII_MIX)
def test_ascii_fast_path_matches_the_plain_rule(text: str) -> None:
    assert estimate_tokens(text) == reference_estimate(text)


@given(st.text(max_size=80))
def test_any_text_matches_the_plain_rule(text: str) -> None:
    assert estimate_tokens(text) == reference_estimate(text)


def test_a_large_log_matches_the_plain_rule() -> None:
    log = "".join(f"tests/test_{i}.py::test_case_{i} PASSED   [{i % 100:3d}%]\n"
                  for i in range(3000))
    assert estimate_tokens(log) == reference_estimate(log)
    assert estimate_tokens(log + "認証") == reference_estimate(log + "認証")

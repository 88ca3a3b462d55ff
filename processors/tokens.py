"""Token counting: the counter type and the estimate used when no tokenizer is at hand.

The segmenter and the chunker take a :data:`TokenCounter` (usually the embedder's
``count_tokens``); :func:`estimate_tokens` is the fallback. It is pure and fast: three
compiled regular expressions, one pass each, no per-character Python loop.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: Anything that maps a text to its token count (an embedder's ``count_tokens``).
TokenCounter = Callable[[str], int]

# Scripts written without spaces, where tokenizers spend about one token per character:
# Hangul Jamo, CJK radicals/symbols, kana, Bopomofo, Hangul compatibility jamo,
# CJK Extension A, CJK Unified Ideographs, Hangul syllables, CJK compatibility
# ideographs, half-width katakana, and the supplementary ideograph planes.
_CJK_CLASS = (
    "\u1100-\u11ff"
    "\u2e80-\u2fdf"
    "\u3040-\u30ff"
    "\u3100-\u312f"
    "\u3130-\u318f"
    "\u31f0-\u31ff"
    "\u3400-\u4dbf"
    "\u4e00-\u9fff"
    "\uac00-\ud7af"
    "\uf900-\ufaff"
    "\uff66-\uff9f"
    "\U00020000-\U0003134f"
)
_CJK_RE = re.compile(f"[{_CJK_CLASS}]")
# A run of word characters (letters, digits, underscore) that are not CJK.
_WORD_RE = re.compile(f"[^\\W{_CJK_CLASS}]+")
# One symbol: neither a word character nor whitespace (punctuation, operators, emoji).
_SYMBOL_RE = re.compile(r"[^\w\s]")

_CHARS_PER_WORD_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Estimate the token count of ``text`` without a tokenizer.

    The rule (documented here because chunk and range bounds depend on it):

    * every CJK ideograph, kana or Hangul character counts 1 token;
    * every other run of word characters (letters, digits, ``_``) counts
      ``ceil(len(run) / 4)`` tokens, i.e. about one token per 4 characters and at
      least one per word-piece;
    * every symbol (punctuation, operator, emoji: neither word character nor
      whitespace) counts 1 token;
    * whitespace counts 0;
    * non-empty text counts at least 1 (so whitespace-only text is 1), empty text 0.

    It leans high for code and logs (symbols count one each), which is the safe side
    for the bounds it feeds. It is additive over line boundaries except for the
    minimum of 1 on whitespace-only text.
    """
    if not text:
        return 0
    cjk = len(_CJK_RE.findall(text))
    symbols = len(_SYMBOL_RE.findall(text))
    words = sum(
        (len(run) + _CHARS_PER_WORD_TOKEN - 1) // _CHARS_PER_WORD_TOKEN
        for run in _WORD_RE.findall(text)
    )
    return max(1, cjk + symbols + words)

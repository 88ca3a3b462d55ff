"""Token counting: the counter type and the estimate used when no tokenizer is at hand.

The segmenter and the chunker take a :data:`TokenCounter` (usually the embedder's
``count_tokens``); :func:`estimate_tokens` is the fallback. It is pure and fast: ASCII text
(most events) is counted on its bytes by a few C passes (translate, replace, count);
other text by three compiled patterns, one pass each; no per-character Python loop.
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
# One symbol: neither a word character nor whitespace (punctuation, operators, emoji).
_SYMBOL_RE = re.compile(r"[^\w\s]")
_CHARS_PER_WORD_TOKEN = 4
# Non-CJK word pieces of up to 4 characters: a run of n word characters gives exactly
# ceil(n / 4) matches, so counting matches replaces a per-run Python loop.
_WORD_PIECE_RE = re.compile(f"[^\\W{_CJK_CLASS}]{{1,{_CHARS_PER_WORD_TOKEN}}}")
# ASCII text (most events, logs) is counted on bytes, with no per-token object at all:
# the word and whitespace bytes below are taken from the same \w and \s classes.
_ASCII_WORD = bytes(c for c in range(128) if re.match(r"\w", chr(c)))
_ASCII_WORD_OR_SPACE = _ASCII_WORD + bytes(c for c in range(128) if re.match(r"\s", chr(c)))
_TO_W_OR_SPACE = bytes(ord("w") if c in _ASCII_WORD else ord(" ") for c in range(256))
_W_PIECE = b"w" * _CHARS_PER_WORD_TOKEN
_RUN_END = b"w "
_RUN_END_PADDED = b"w" * _CHARS_PER_WORD_TOKEN + b" "  # the end of a run, 3 more bytes


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
    if text.isascii():
        # On bytes: symbols are the bytes left once word and whitespace bytes are deleted;
        # a word run of n bytes, padded with 3 more at its end, holds exactly ceil(n / 4)
        # non-overlapping "wwww" (this runs for every line of every chunk).
        data = text.encode("ascii")
        padded = (data.translate(_TO_W_OR_SPACE) + b" ").replace(_RUN_END, _RUN_END_PADDED)
        return max(1, len(data.translate(None, _ASCII_WORD_OR_SPACE))
                   + padded.count(_W_PIECE))
    cjk = len(_CJK_RE.findall(text))
    symbols = len(_SYMBOL_RE.findall(text))
    words = len(_WORD_PIECE_RE.findall(text))
    return max(1, cjk + symbols + words)

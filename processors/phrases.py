"""Search phrases and language of a text (the observer's hints besides exact values)."""

from __future__ import annotations

import re
from collections import Counter

_KANA = re.compile(r"[\u3040-\u30ff\uff66-\uff9f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LATIN = re.compile(r"[A-Za-z]")


def detect_language(text: str) -> str:
    """``"ja"``, ``"ko"``, ``"zh"``, ``"ru"`` or ``"en"`` from script counts (heuristic)."""
    kana = len(_KANA.findall(text))
    cjk = kana + len(_HAN.findall(text))
    latin = len(_LATIN.findall(text))
    if kana >= 3 or (kana and cjk * 5 >= latin):
        return "ja"
    hangul = len(_HANGUL.findall(text))
    if hangul and hangul * 5 >= latin:
        return "ko"
    if cjk and cjk * 5 >= latin:
        return "zh"
    cyr = len(_CYRILLIC.findall(text))
    return "ru" if cyr and cyr >= latin else "en"


_JA_RUN = re.compile(r"[\u30a0-\u30ff\uff66-\uff9f\u3400-\u4dbf\u4e00-\u9fff々]{2,}")
_JA_SCRIPT_RUN = re.compile(r"[\u30a0-\u30ff\uff66-\uff9f]{2,}|[\u3400-\u4dbf\u4e00-\u9fff々]{2,}")
_JA_STOP = frozenset(
    "今回 以下 以上 場合 必要 可能 部分 内容 方法 今日 明日 了解 本当 大丈夫 一度 全部 次回 前回 "
    "お願 確認 対応 問題 感じ 自分 何か 時間 最初 最後 結果".split()
)
_EN_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
_EN_STOP = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto over under
    is are was were be been being am do does did done have has had having i you he she it we
    they me him her us them my your our their its this that these those there here what which
    who whom whose when where why how all any both each few more most other some such no nor
    not only own same so than too very can will just should now also please let lets let's
    ok okay yes yeah thanks thank hi hello sure again still get got make made use used using
    need needs want wants try check see run ran look looks like would could may might must
    shall one two new now up out about after before because while then once via per instead
    done fine good great first last next well much many way thing things something it's i'm
    don't doesn't didn't can't won't that's what's there's here's we'll you'll i'll we're
    they're file files line lines added updated changed fixed""".split()
)
_MAX_PHRASES = 12


def extract_phrases(text: str, lang: str) -> list[str]:
    """A few short search phrases in ``lang``: noun runs for Japanese, bigrams/keywords else."""
    if lang in ("ja", "zh"):
        return _ja_phrases(text)
    return _en_phrases(text)


def _top(counter: Counter[str], first: dict[str, int], n: int) -> list[str]:
    return sorted(counter, key=lambda p: (-counter[p], first[p]))[:n]


def _ja_phrases(text: str) -> list[str]:
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for pattern in (_JA_SCRIPT_RUN, _JA_RUN):
        for m in pattern.finditer(text):
            run = m.group(0)
            if run in _JA_STOP or len(run) > 16:
                continue
            counts[run] += 1
            first.setdefault(run, m.start())
    return _top(counts, first, _MAX_PHRASES)


def _en_phrases(text: str) -> list[str]:
    words: list[tuple[int, str] | None] = []
    prev_end = 0
    for m in _EN_WORD.finditer(text):
        gap = text[prev_end:m.start()]
        if gap.strip():
            words.append(None)  # punctuation, digits or code between: a phrase boundary
        raw = m.group(0)
        plain = raw.islower() or (raw[0].isupper() and raw[1:].islower())
        word = raw.lower()
        ok = plain and len(word) >= 3 and word not in _EN_STOP
        words.append((m.start(), word) if ok else None)
        prev_end = m.end()
    bigrams: Counter[str] = Counter()
    unigrams: Counter[str] = Counter()
    first: dict[str, int] = {}
    for a, b in zip(words, words[1:], strict=False):
        if a is not None and b is not None:
            bigrams[f"{a[1]} {b[1]}"] += 1
            first.setdefault(f"{a[1]} {b[1]}", a[0])
    for w in words:
        if w is not None and len(w[1]) >= 4:
            unigrams[w[1]] += 1
            first.setdefault(w[1], w[0])
    phrases = _top(bigrams, first, _MAX_PHRASES // 2)
    return phrases + _top(unigrams, first, _MAX_PHRASES - len(phrases))

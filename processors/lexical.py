"""The lexical (sparse, BM25-style) recall channel: terms, term ids and weights.

Tokenization is identifier- and CJK-aware: identifiers and paths are kept whole *and*
split into their parts, so ``AUTH_ALLOWED_DOMAINS``, ``auth allowed domains`` and
``allowed`` all meet; CJK runs become character bigrams. Term ids are a stable 31-bit
blake2b hash (identical in every process, unlike ``hash()``). Document vectors carry a
saturated term frequency; the index (Qdrant, ``Modifier.IDF``) applies the IDF.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import overload

from breadcrumb.processors.identifier_words import ABBREVIATIONS
from breadcrumb.topics.records import SparseVector

#: BM25 term-frequency saturation.
K1 = 1.2
#: BM25 length normalization strength.
B = 0.75
#: Fixed average document length in terms (a breadcrumb's embedding text or a chunk of
#: ~256 tokens yields about this many terms); fixed so weights never depend on corpus
#: state and replays reproduce the same vectors.
AVG_DOC_TERMS = 200.0

_CJK = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
_WORD = f"[^\\W{_CJK}]"
_TOKEN = re.compile(f"(?P<cjk>[{_CJK}]+)|(?P<word>{_WORD}(?:{_WORD}|[./\\-](?={_WORD}))*)")
#: :data:`_TOKEN` on ASCII text, where no CJK character occurs and a word character is one
#: of [A-Za-z0-9_]: a word run, then runs each after one separator (the same tokens, as
#: both take the longest match; about 5x faster).
_ASCII_WORD = re.compile(r"\w+(?:[./\-]\w+)*", re.ASCII)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_A-Za-z]+")
_SEPARATORS = ("/", ".", "-", "_")


def lexical_terms(text: str) -> list[str]:
    """Lowercased terms of ``text`` with repeats (term frequency matters).

    ``validate-email.ts`` → validate-email.ts, validate-email, validate, email, ts;
    ``validateEmail`` → validateemail, validate, email; ``認証方式`` → 認証, 証方, 方式.
    """
    if text.isascii():  # NFKC leaves ASCII as it is; _ASCII_WORD finds _TOKEN's tokens
        terms: list[str] = []
        cache = _EXPANDED
        for word in _ASCII_WORD.findall(text):
            parts = cache.get(word)
            terms.extend(_parts(word) if parts is None else parts)
        return terms
    terms = []
    # findall gives (cjk, word) tuples, "" for the group that did not take part (neither
    # group can match empty): cheaper than a Match object per token
    for cjk, word in _TOKEN.findall(unicodedata.normalize("NFKC", text)):
        terms.extend(_bigrams(cjk) if cjk else _parts(word))
    return terms


def _parts(word: str) -> tuple[str, ...]:
    """:func:`_expand` of a word, cached."""
    parts = _EXPANDED.get(word)
    if parts is None:
        parts = tuple(_expand(word))
        if len(_EXPANDED) >= _CACHE_MAX:
            _EXPANDED.clear()  # pure functions of the word: dropping costs time only
        _EXPANDED[word] = parts
    return parts


# Identifiers and words repeat across texts: their expansions and term ids are cached
# (bounded; both are pure functions of the string).
_CACHE_MAX = 100_000
_EXPANDED: dict[str, tuple[str, ...]] = {}
_TERM_IDS: dict[str, int] = {}


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


def _expand(token: str) -> list[str]:
    """The token (lowercased) and, recursively, its parts split on / . - _ and case."""
    out = [token.lower()]
    for sep in _SEPARATORS:
        if sep in token:
            for part in token.split(sep):
                if len(part) > 1 or part.isdigit():
                    out.extend(_expand(part))
            return out
    if not (token.islower() or token.isupper()):
        parts = _CAMEL.findall(token)
        if len(parts) > 1:
            out.extend(p.lower() for p in parts if len(p) > 1 or p.isdigit())
    return out


def term_id(term: str) -> int:
    """Stable id of a term: the first 4 bytes of blake2b, masked to 31 bits."""
    tid = _TERM_IDS.get(term)
    if tid is None:
        digest = hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest()
        tid = int.from_bytes(digest, "big") & 0x7FFFFFFF
        if len(_TERM_IDS) >= _CACHE_MAX:
            _TERM_IDS.clear()
        _TERM_IDS[term] = tid
    return tid


def sparse_vector(text: str) -> SparseVector:
    """Document vector: BM25 saturated tf per term (k1=1.2, b=0.75, avgdl=AVG_DOC_TERMS)."""
    terms = lexical_terms(text)
    tf: dict[int, int] = {}
    for term, n in Counter(terms).items():  # one id look-up per distinct term
        tid = term_id(term)
        tf[tid] = tf.get(tid, 0) + n  # two terms may share an id: their counts add up
    norm = K1 * (1.0 - B + B * len(terms) / AVG_DOC_TERMS)
    indices = tuple(sorted(tf))
    values = tuple(tf[i] * (K1 + 1.0) / (tf[i] + norm) for i in indices)
    return SparseVector(indices=indices, values=values)


class SparseVectors(Sequence[SparseVector]):
    """The document vectors of ``texts`` (:func:`sparse_vector`), each computed when first
    read and once per distinct text: an index that keeps no sparse vectors never pays for
    them, and texts repeated in one batch (a long log's chunks, a replica's) cost one."""

    def __init__(self, texts: Sequence[str],
                 known: dict[str, SparseVector] | None = None) -> None:
        self.texts = texts
        self.known = {} if known is None else known  # text -> vector (shareable)

    def __len__(self) -> int:
        return len(self.texts)

    @overload
    def __getitem__(self, i: int) -> SparseVector: ...

    @overload
    def __getitem__(self, i: slice) -> list[SparseVector]: ...

    def __getitem__(self, i: int | slice) -> SparseVector | list[SparseVector]:
        if isinstance(i, slice):
            return [self._vector(t) for t in self.texts[i]]
        return self._vector(self.texts[i])

    def __iter__(self) -> Iterator[SparseVector]:
        return (self._vector(t) for t in self.texts)

    def _vector(self, text: str) -> SparseVector:
        vector = self.known.get(text)
        if vector is None:
            vector = self.known[text] = sparse_vector(text)
        return vector


def sparse_query(text: str) -> SparseVector:
    """Query vector: weight 1.0 per unique query term."""
    indices = tuple(sorted({term_id(t) for t in lexical_terms(text)}))
    return SparseVector(indices=indices, values=tuple(1.0 for _ in indices))


# ---- the query side: stopwords, light stems, a ja<->en glossary ------------------------
#: English function words never worth matching in a question.
EN_STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from into is are was were be been
    do does did done have has had i you we they it its this that these those there what which
    who whom when where why how all any some me my our your us them can could should would
    will shall may might must please again now just also about show tell give get set""".split()
)
_HIRAGANA = re.compile(r"[\u3040-\u309f]")
#: Technical words of Japanese questions and their English forms (both directions).
GLOSSARY: dict[str, tuple[str, ...]] = {
    "正規表現": ("regex", "regexp"), "メールアドレス": ("email",), "メール": ("email",),
    "認証": ("auth",), "サインアップ": ("signup", "sign"), "ドメイン": ("domains", "domain"),
    "許可": ("allowed", "allow"), "ポート": ("port",), "イメージ": ("image",),
    "タグ": ("tag",), "ローカル": ("local", "locally"), "エラー": ("error",),
    "テスト": ("test", "tests"), "落ち": ("failed", "fail"), "失敗": ("failed", "fail"),
    "クーポン": ("coupon",), "丸め": ("rounding",), "論文": ("paper", "papers", "arxiv"),
    "フェア": ("fair",), "キューイング": ("queueing", "queue"), "レート": ("rate",),
    "制限": ("limit", "limiting"), "チェックアウト": ("checkout",), "決め": ("decided",),
    "決定": ("decided", "decision"), "在庫": ("inventory",), "同期": ("sync",),
    "手動": ("manual", "manually"), "エンドポイント": ("endpoint",), "カラム": ("column",),
    "金額": ("amount", "total", "cents"), "テーブル": ("table",), "売上": ("revenue",),
    "先週": ("week",), "データベース": ("database", "db"), "設定": ("config",),
    "環境変数": ("env",), "パス": ("path",), "関数": ("function",), "コマンド": ("command",),
    "ファイル": ("file",), "サーバー": ("server",), "連続": ("double",), "ドット": ("dot",),
    "バッチ": ("batch", "job"), "接続": ("connect", "connects"), "繋": ("connect", "connects"),
    "アプリ": ("app",), "適応": ("adaptive",), "トークンバケット": ("token", "bucket"),
    "バケット": ("bucket",), "トークン": ("token",), "全テスト": ("suite",),
    # words that identifiers are made of (MAX_RETRY_COUNT, retryDelayMs, validate-email)
    "リトライ": ("retry", "retries"), "再試行": ("retry", "retries"), "最大": ("max", "maximum"),
    "最小": ("min", "minimum"), "上限": ("max", "limit"), "下限": ("min",),
    "回数": ("count", "times"), "件数": ("count",),
    "間隔": ("interval", "delay"), "遅延": ("delay",), "待ち": ("wait", "delay"),
    "タイムアウト": ("timeout",), "秒": ("seconds", "sec"), "ミリ秒": ("ms", "milliseconds"),
    "有効期限": ("ttl", "expiry", "expires"), "キャッシュ": ("cache",), "プール": ("pool",),
    "サイズ": ("size",), "接続数": ("connections", "pool"), "並列": ("concurrency", "parallel"),
    "ワーカー": ("worker", "workers"), "検証": ("validate", "validation"),
    "バリデーション": ("validate", "validation"), "電話番号": ("phone",), "電話": ("phone",),
    "パスワード": ("password",), "ユーザー": ("user",), "ログ": ("log",),
    "バッチサイズ": ("batch", "size"), "閾値": ("threshold",), "しきい値": ("threshold",),
    "フラグ": ("flag",),
    "長さ": ("length", "len"), "名前": ("name",), "期間": ("period", "duration"),
}
_EN_TO_JA: dict[str, tuple[str, ...]] = {}
for _ja, _ens in GLOSSARY.items():
    for _en in _ens:
        _EN_TO_JA[_en] = (*_EN_TO_JA.get(_en, ()), _ja)
#: Identifier abbreviations <-> their words ("maximum" meets MAX_RETRY_COUNT's "max").
_ABBREV: dict[str, tuple[str, ...]] = {}
for _short, _long in ABBREVIATIONS.items():
    if " " not in _long:
        _ABBREV[_short] = (*_ABBREV.get(_short, ()), _long)
        _ABBREV[_long] = (*_ABBREV.get(_long, ()), _short)
_SUFFIXES = (("ing", 5), ("ed", 4), ("ly", 5), ("es", 5), ("s", 4))  # (suffix, min length)
EXPANSION_WEIGHT = 0.7
#: A CJK word yields several overlapping bigrams; each weighs less than a whole word.
CJK_BIGRAM_WEIGHT = 0.5


def query_terms(text: str) -> dict[str, float]:
    """Weighted terms of a *question*: words 1.0, CJK bigrams 0.5, stems/translations 0.7.

    Drops English stopwords and CJK bigrams holding hiragana (particles such as
    を, は, した); adds light English stems (``failed`` → ``fail``) and the English or
    Japanese form of glossary words so a Japanese question meets an English memory.
    """
    weights: dict[str, float] = {}
    for term in lexical_terms(text):
        if term in EN_STOPWORDS or _HIRAGANA.search(term):
            continue
        weights[term] = CJK_BIGRAM_WEIGHT if _is_cjk_piece(term) else 1.0
        stem = _stem(term)
        if stem and stem not in weights:
            weights[stem] = EXPANSION_WEIGHT
    for extra in _translations(unicodedata.normalize("NFKC", text), set(weights)):
        weights.setdefault(extra, CJK_BIGRAM_WEIGHT / 2 if _is_cjk_piece(extra)
                           else EXPANSION_WEIGHT)
    return weights


COMPOUND_WEIGHT = 1.0  # a source's identifier naming two question words is one of them


def with_compounds(question: str, terms: dict[str, float]) -> dict[str, float]:
    """``terms`` plus the identifiers two adjacent plain words of ``question`` make
    ("which database version" -> ``database_version``, ``database-version``,
    ``databaseversion``: what :func:`lexical_terms` reads ``database_version``,
    ``databaseVersion`` as whole), for matching source lines: the line that names the
    two words as one name is about them (real session n04, terraform's
    ``database_version = "POSTGRES_15"``)."""
    out = dict(terms)
    words = [w.strip("?!.,;:()[]\"'`").lower() for w in question.split()]
    for a, b in zip(words, words[1:], strict=False):
        if (a.isalpha() and b.isalpha() and a.isascii() and b.isascii() and len(a) > 2
                and len(b) > 2 and a not in EN_STOPWORDS and b not in EN_STOPWORDS):
            for joined in (f"{a}_{b}", f"{a}-{b}", a + b):
                out.setdefault(joined, COMPOUND_WEIGHT)
    return out


def with_verb_forms(terms: dict[str, float]) -> dict[str, float]:
    """``terms`` plus the plain form of each ``-ed`` word whose stem drops an ``e``
    ("graded" -> "grade": ``query_terms`` gives "grad"), for matching source lines (a
    test named ``…_and_grade``); retrieval keeps ``query_terms`` as it is."""
    out = dict(terms)
    for term in terms:
        if term.endswith("ed") and len(term) > 5 and term.isascii() and term.isalpha():
            out.setdefault(term[:-1], EXPANSION_WEIGHT)
    return out


def _is_cjk_piece(term: str) -> bool:
    """A CJK bigram (or single character): one of several pieces of one word."""
    return len(term) <= 2 and not term.isascii()


def _stem(term: str) -> str | None:
    if not term.isascii() or not term.isalpha():
        return None
    if term.endswith(("ss", "is", "us")):
        return None
    if term.endswith("ies") and len(term) > 4:
        return term[:-3] + "y"  # "retries" -> "retry"
    if term.endswith("es") and not term.endswith(("xes", "ches", "shes", "sses")):
        return term[:-1] if len(term) > 4 else None  # "images" -> "image"
    for suffix, min_len in _SUFFIXES:
        if term.endswith(suffix) and len(term) >= min_len + len(suffix) - 2:
            return term[: -len(suffix)]
    return None


def _translations(text: str, terms: set[str]) -> list[str]:
    out: list[str] = []
    for ja, ens in GLOSSARY.items():
        if ja in text:
            out.extend(ens)
    for term in terms:
        for ja in _EN_TO_JA.get(term, ()):
            out.extend(_bigrams(ja))
        out.extend(_ABBREV.get(term, ()))
    return out


def weighted_query(text: str) -> SparseVector:
    """Query vector of :func:`query_terms` (the recall service's lexical channel)."""
    by_id: dict[int, float] = {}
    for term, weight in query_terms(text).items():
        tid = term_id(term)
        by_id[tid] = max(weight, by_id.get(tid, 0.0))
    indices = tuple(sorted(by_id))
    return SparseVector(indices=indices, values=tuple(by_id[i] for i in indices))

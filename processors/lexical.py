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

from topics.records import SparseVector

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
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_A-Za-z]+")
_SEPARATORS = ("/", ".", "-", "_")


def lexical_terms(text: str) -> list[str]:
    """Lowercased terms of ``text`` with repeats (term frequency matters).

    ``validate-email.ts`` → validate-email.ts, validate-email, validate, email, ts;
    ``validateEmail`` → validateemail, validate, email; ``認証方式`` → 認証, 証方, 方式.
    """
    terms: list[str] = []
    for m in _TOKEN.finditer(unicodedata.normalize("NFKC", text)):
        if m.group("cjk") is not None:
            terms.extend(_bigrams(m.group("cjk")))
        else:
            terms.extend(_expand(m.group("word")))
    return terms


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
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


def sparse_vector(text: str) -> SparseVector:
    """Document vector: BM25 saturated tf per term (k1=1.2, b=0.75, avgdl=AVG_DOC_TERMS)."""
    terms = lexical_terms(text)
    tf = Counter(term_id(t) for t in terms)
    norm = K1 * (1.0 - B + B * len(terms) / AVG_DOC_TERMS)
    indices = tuple(sorted(tf))
    values = tuple(tf[i] * (K1 + 1.0) / (tf[i] + norm) for i in indices)
    return SparseVector(indices=indices, values=values)


def sparse_query(text: str) -> SparseVector:
    """Query vector: weight 1.0 per unique query term."""
    indices = tuple(sorted({term_id(t) for t in lexical_terms(text)}))
    return SparseVector(indices=indices, values=tuple(1.0 for _ in indices))

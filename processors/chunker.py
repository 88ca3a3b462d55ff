"""Line-aware, token-bounded chunks of a source range (the ``source_chunks`` index).

Each event's content is cut into *units*: its lines (``str.splitlines(keepends=True)``),
and for a line over the budget, its whitespace-separated pieces, and for a piece
still over it, the longest character prefixes that fit. Consecutive units are packed
greedily up to ``max_tokens``. Every chunk is a verbatim slice:
``event.content[chunk.char_start:chunk.char_end] == chunk.text``, and the chunks of an
event tile its content in order (empty content gives no chunk). A chunk never spans
two events.

A span whose text an earlier chunk of the same memory already holds gives no chunk (issue
49: no chunk where it carries nothing new). Such repeats are a command run again, a
message or a log line an agent printed twice: about 5 % of the chunks on the store-cost
bench and 6 % on the real sessions of the evaluation sets. A search finds the memory
through the first copy, and the event stays in the memory's range verbatim. Each chunk
costs about 1.4 KB of the embedded store (its row, vectors, payload and their indexes).

Cost is linear in the content: each unit is counted once, each packed chunk of several
units once more to verify the bound (token counts of real tokenizers are not exactly additive; a
chunk that fails the check is split in halves by units). A constant per-call
overhead, ``count_tokens("")`` (e.g. the special tokens a tokenizer adds), is counted
once per chunk rather than once per unit.

The one case where a chunk can exceed ``max_tokens``: a single character whose count
alone is over the budget (only possible with a counter that charges more than
``max_tokens`` for one character, e.g. its special tokens); it becomes its own chunk.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from breadcrumb.processors.ids import chunk_id
from breadcrumb.processors.tokens import TokenCounter
from breadcrumb.topics.records import Chunk, Event

# A word with its surrounding whitespace, or a whitespace-only run: matches tile a line.
_PIECE_RE = re.compile(r"\s*\S+\s*|\s+")
# A prefix search for a character split never looks further than this many characters
# per token of budget (a cap on the cost of one search; shorter cuts stay correct).
_MAX_CHARS_PER_TOKEN = 16

# A unit: (start, end, cost, tokens) with offsets into the content, cost excluding the
# overhead and tokens as counted (a chunk of one unit is not counted again).
_Unit = tuple[int, int, int, int]


@dataclass(frozen=True)
class ChunkerConfig:
    """Chunk bound (settings: ``chunk_max_tokens``); ``keep_repeats`` keeps a chunk whose
    text an earlier chunk of the memory holds (left out by default, see the module doc)."""

    max_tokens: int = 256
    keep_repeats: bool = False

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"chunk max_tokens must be >= 1, got {self.max_tokens}")


def chunk_events(
    events: Sequence[Event], memory_id: str, cfg: ChunkerConfig, count_tokens: TokenCounter
) -> list[Chunk]:
    """Cut each event's content into verbatim, token-bounded chunks of one memory.

    Events must be indexed (``ValueError`` otherwise). Chunk ids come from
    :func:`processors.ids.chunk_id` and are stable across replays.
    """
    counter = _Counter(count_tokens, cfg.max_tokens)
    chunks: list[Chunk] = []
    held: set[str] = set()  # the texts of the memory's chunks so far
    for event in events:
        if event.index is None:
            raise ValueError(f"event {event.event_id!r} has no index; chunk stored events")
        for start, end, tokens in counter.spans(event.content):
            text = event.content[start:end]
            if text in held and not cfg.keep_repeats:
                continue
            held.add(text)
            chunks.append(_make_chunk(event, event.index, memory_id, (start, end, tokens)))
    return chunks


def _make_chunk(event: Event, index: int, memory_id: str, span: tuple[int, int, int]) -> Chunk:
    start, end, tokens = span
    return Chunk(
        id=chunk_id(memory_id, event.event_id, start),
        memory_id=memory_id,
        user_id=event.user_id,
        project_id=event.project_id,
        thread_id=event.thread_id,
        event_id=event.event_id,
        event_index=index,
        char_start=start,
        char_end=end,
        text=event.content[start:end],
        tokens=tokens,
    )


class _Counter:
    """Cuts one text into (start, end, tokens) spans under a token budget."""

    def __init__(self, count_tokens: TokenCounter, max_tokens: int) -> None:
        self.count = count_tokens
        self.max = max_tokens
        self.overhead = max(0, count_tokens(""))

    def spans(self, text: str) -> list[tuple[int, int, int]]:
        """Packed, verified spans tiling ``text``."""
        out: list[tuple[int, int, int]] = []
        for group in self._pack(self._units(text)):
            self._verify(text, group, out)
        return out

    def _units(self, text: str) -> Iterator[_Unit]:
        pos = 0
        count, limit, overhead = self.count, self.max, self.overhead  # hot loop: locals
        for line in text.splitlines(keepends=True):
            end = pos + len(line)
            tokens = count(line)
            if tokens <= limit:
                yield pos, end, tokens - overhead if tokens > overhead else 0, tokens
            else:
                yield from self._line_units(text, pos, line)
            pos = end

    def _line_units(self, text: str, base: int, line: str) -> Iterator[_Unit]:
        for match in _PIECE_RE.finditer(line):
            start, end = base + match.start(), base + match.end()
            tokens = self.count(match.group())
            if tokens <= self.max:
                yield start, end, self._cost(tokens), tokens
            else:
                yield from self._char_units(text, start, end)

    def _char_units(self, text: str, start: int, end: int) -> Iterator[_Unit]:
        pos = start
        while pos < end:
            length, tokens = self._longest_prefix(text, pos, min(end, pos + self._cap()))
            yield pos, pos + length, self._cost(tokens), tokens
            pos += length

    def _longest_prefix(self, text: str, start: int, stop: int) -> tuple[int, int]:
        """Longest ``text[start:start+n]`` (n <= stop-start) that fits; at least 1 char."""
        lo, lo_tokens, hi = 0, 0, stop - start + 1  # invariant: lo fits, hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            tokens = self.count(text[start : start + mid])
            if tokens <= self.max:
                lo, lo_tokens = mid, tokens
            else:
                hi = mid
        if lo == 0:  # even one character is over budget: the documented exception
            return 1, self.count(text[start : start + 1])
        return lo, lo_tokens

    def _cap(self) -> int:
        return max(1, self.max * _MAX_CHARS_PER_TOKEN)

    def _cost(self, tokens: int) -> int:
        return max(0, tokens - self.overhead)

    def _pack(self, units: Iterator[_Unit]) -> Iterator[list[_Unit]]:
        group: list[_Unit] = []
        limit, overhead = self.max, self.overhead
        cost = overhead
        for unit in units:
            if group and cost + unit[2] > limit:
                yield group
                group, cost = [], overhead
            group.append(unit)
            cost += unit[2]
        if group:
            yield group

    def _verify(self, text: str, group: list[_Unit], out: list[tuple[int, int, int]]) -> None:
        start, end = group[0][0], group[-1][1]
        tokens = group[0][3] if len(group) == 1 else self.count(text[start:end])
        if tokens <= self.max or len(group) == 1:
            out.append((start, end, tokens))
            return
        half = len(group) // 2
        self._verify(text, group[:half], out)
        self._verify(text, group[half:], out)

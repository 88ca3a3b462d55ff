"""The ingest step both drivers share: decoded log entries in, stores updated.

The ingest core (``streams.ingest_core``) opens one block of work
(:meth:`IngestService.batched`, an :class:`IngestBlock`) per unit and hands it each entry
of the embedded SQLite log or of ``agent-events``, decoded, validated and checked against
erasures once, before it gets here. All business rules live in ``processors``; this
module only moves data between them and the ports. Its types (results, hooks, a
driver's batch context) are in :mod:`.service_types`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import orjson

from breadcrumb.processors.chunker import chunk_events
from breadcrumb.processors.embed_digest import (
    dense_column,
    dense_texts,
    memory_dense_text,
    to_embed,
)
from breadcrumb.processors.lexical import SparseVectors
from breadcrumb.processors.observer import observe
from breadcrumb.processors.segmenter import ThreadState, flush
from breadcrumb.processors.sequencing import Rejected, step
from breadcrumb.stores.ports import (
    BatchedMemoryWrites,
    DeadLetterStore,
    Embedder,
    MemoryStore,
    RawEventStore,
    ThreadStateStore,
    VectorIndex,
)
from breadcrumb.stores.ports.tables import RawEvents
from breadcrumb.stores.sql.raw_batch import BatchedRawEvents
from breadcrumb.streams.service_types import (
    SLOW_EMBED_SECONDS_PER_TEXT,
    BatchContext,
    Built,
    Clock,
    HandleResult,
    MemoryHooks,
    ObserveFn,
    PassageSink,
    PipelineConfig,
)
from breadcrumb.streams.state import WriteBackStates
from breadcrumb.topics.records import (
    ClosedRange,
    DeadLetter,
    Event,
    FlushMarker,
    Observation,
    SparseVector,
    thread_key,
)

__all__ = ["SLOW_EMBED_SECONDS_PER_TEXT", "BatchContext", "Built", "HandleResult", "IngestBlock",
           "IngestService", "MemoryHooks", "ObserveFn", "PassageSink", "PipelineConfig"]
log = logging.getLogger(__name__)

class IngestBlock:
    """One block of work (:meth:`IngestService.batched`): the raw events and thread states
    it reads and writes (the batching wrappers when the driver asked for them: built for
    the block, never swapped into the service) and the memories built in it, embedded and
    written at its end. Entries come decoded and checked (``streams.ingest_core``): an
    :class:`~breadcrumb.topics.records.Event` or a flush marker mapping.
    """

    def __init__(self, service: IngestService, raw: RawEventStore, states: ThreadStateStore,
                 context: BatchContext) -> None:
        self.service = service
        self.raw = raw
        self.states = states
        self.context = context
        self.pending: list[Built] = []
        self.texts: list[str] | None = None  # a rehearsal's: what the block would embed

    def handle(self, entry: Event | dict[str, Any], raw_text: str | None = None
               ) -> HandleResult:
        """Apply one decoded entry: an event, or a flush marker mapping."""
        if isinstance(entry, Event):
            return self.handle_event(entry, raw_text)
        if isinstance(entry, dict) and FlushMarker.is_flush(entry):
            return self.handle_flush(str(entry["user_id"]), str(entry["thread_id"]), entry)
        raise TypeError("an entry reaches the service decoded: an Event or a flush marker "
                        "(streams.ingest_core.decode_entry)")

    def handle_event(self, event: Event, raw_text: str | None = None) -> HandleResult:
        """Sequence one valid event and apply every range it closes."""
        key = event.thread_key
        state = self._load_state(event.user_id, event.thread_id, event.project_id)
        stored = self.raw.get_event(event.user_id, event.event_id)
        if stored is not None and stored.index is not None:
            if stored.index < state.next_index:
                return HandleResult("duplicate")
            event = stored  # stored before a crash but never segmented: re-feed it as stored
        service = self.service
        new_state, outcome, closed = step(
            state, event, service.config.segmenter, service.embedder.count_tokens
        )
        if isinstance(outcome, Rejected):
            return self.reject(outcome.reason, outcome.field, raw_text, event.to_dict())
        if stored is None:
            self.raw.put_event(outcome.event)
        observations = self._apply_ranges(closed)
        self.states.put_state(key, new_state.to_dict())
        return HandleResult("processed", observations)

    def handle_flush(self, user_id: str, thread_id: str, entry: dict[str, Any]) -> HandleResult:
        """Close a thread's open window (idle timeout or end of an ingest)."""
        key = thread_key(user_id, thread_id)
        data = self.states.get_state(key)
        if data is None:
            return HandleResult("flushed")
        new_state, closed = flush(ThreadState.from_dict(data), str(entry.get("reason", "idle")))
        observations = self._apply_ranges(closed)
        self.states.put_state(key, new_state.to_dict())
        return HandleResult("flushed", observations)

    def reject(self, reason: str, fld: str | None, raw_text: str | None, entry: Any = None,
               source: str | None = None) -> HandleResult:
        """:meth:`IngestService.reject` into this block's dead letters."""
        return self.service.reject(reason, fld, raw_text, entry, source,
                                   letters=self.context.letters)

    def _apply_ranges(self, closed: Sequence[ClosedRange]) -> list[Observation]:
        return [self.build_memory(c) for c in closed]

    def build_memory(self, closed: ClosedRange) -> Observation:
        """Turn a closed range into an observation + chunks (embedded and indexed at the
        end of the block)."""
        rng = closed.source_range
        service = self.service
        events = self.raw.get_range(closed.user_id, rng.thread_id, rng.start_index, rng.end_index)
        if service.observer is not None:
            observation = service.observer(events, closed)
        else:
            observation = observe(events, closed, service.config.observer)
        chunks = chunk_events(
            events, observation.id, service.config.chunker, service.embedder.count_tokens
        )
        # embed less: what each chunk's dense vector is made of (a digest for long outputs)
        self.pending.append(
            (observation, chunks, dense_texts(chunks, {e.event_id: e.kind for e in events})))
        return observation

    def _load_state(self, user_id: str, thread_id: str, project_id: str | None) -> ThreadState:
        data = self.states.get_state(thread_key(user_id, thread_id))
        if data is None:
            return ThreadState.new(user_id, thread_id, project_id)
        return ThreadState.from_dict(data)


class IngestService:
    """Sequence → store raw → segment → observe/chunk/embed → index, one block at a time.

    Why so many methods: it is the ingest step both drivers share (embedded runner and
    Faust agent): the entry points (batched, handle, prepare, reject) and the short
    private steps between the processors and the ports (embedding, timing, the writes),
    kept in one class so both drivers apply a log entry exactly alike. Entries are
    decoded, validated and checked against erasures before they get here, once per
    entry (``streams.ingest_core``).
    """

    def __init__(
        self,
        raw: RawEventStore,
        memories: MemoryStore,
        dead_letters: DeadLetterStore,
        states: ThreadStateStore,
        index: VectorIndex,
        embedder: Embedder,
        clock: Clock,
        config: PipelineConfig | None = None,
        on_observation: Callable[[Observation], None] | None = None,
        source: str = "log",
        observer: ObserveFn | None = None,
        hooks: MemoryHooks | None = None,
    ) -> None:
        self.raw = raw
        self.memories = memories
        self.dead_letters = dead_letters
        self.states = states
        self.index = index
        self.embedder = embedder
        self.clock = clock
        self.config = config or PipelineConfig()
        self.hooks = hooks  # the lifecycle: on_observation and its batching
        self.on_observation = hooks.on_observation if hooks is not None else on_observation
        self.source = source
        self.observer = observer  # the LLM observer when configured; else deterministic
        self.embed_seconds_per_text: float | None = None  # measured, a moving average
        self.process_seconds_per_text: float | None = None  # a batch's processing, likewise

    @contextmanager
    def batched(self, context: BatchContext | None = None) -> Iterator[IngestBlock]:
        """A block of work (:class:`IngestBlock`): every range closed in it is embedded and
        written at its end: ONE ``embed_passages`` call for the texts of all those ranges
        (many threads embedded together; the embedder splits at its best batch size), one
        vector upsert for their memories and one for their chunks, then the SQL rows and
        lifecycle hooks in closing order. Call it inside the caller's transaction: on an
        exception nothing is written here and the transaction rolls the block back.

        The ``context`` (:class:`BatchContext`) says the rest: with its ``events`` (the
        batch's ``(user_id, event_id)`` pairs) and a store that reads events in batches, the
        block reads and writes raw events through a
        :class:`~breadcrumb.stores.sql.raw_batch.BatchedRawEvents` (one lookup statement,
        one ``executemany``) and thread states through a
        :class:`~breadcrumb.streams.state.WriteBackStates` (each read and written once),
        both the block's own. With ``rehearse`` the block writes nothing at its end: it
        keeps the texts it would embed in ``block.texts`` and the caller rolls its
        transaction back (``streams.rehearsal``)."""
        ctx = context or BatchContext()
        batch_raw = batch_states = None
        if ctx.events is not None and isinstance(self.raw, RawEvents):
            batch_raw, batch_states = BatchedRawEvents(self.raw), WriteBackStates(self.states)
            batch_raw.prefetch(ctx.events)
        block = IngestBlock(self, self.raw if batch_raw is None else batch_raw,
                            self.states if batch_states is None else batch_states, ctx)
        started = time.perf_counter()
        yield block
        plan = self._plan(block.pending, ctx)
        self._timed_processing(time.perf_counter() - started, len(plan[0]))
        if ctx.rehearse:  # nothing written: the caller rolls its transaction back
            block.texts = plan[0]
            return
        if batch_raw is not None and batch_states is not None:
            batch_raw.flush()  # before the hooks: the lifecycle reads these events
            batch_states.flush()
        self._write_memories(block.pending, ctx, plan)

    def handle(self, entry: Event | dict[str, Any], raw_text: str | None = None
               ) -> HandleResult:
        """One decoded entry as a block of its own (callers outside the ingest core)."""
        with self.batched() as block:
            return block.handle(entry, raw_text)

    def _write_memories(self, built: Sequence[Built], ctx: BatchContext,
                        plan: tuple[list[str], list[str | None]]) -> None:
        """Embed, index and store built memories: one embedding call, one upsert each for memories
        and chunks (a chunk's dense vector is of the text ``dense_texts`` chose: its own, a long
        output's digest, or none: ``processors.embed_digest``). Vectors first: an upsert by id is
        idempotent, so a crash before the SQL commit is repaired by re-applying the entries. With
        a passage lane in the block's context the chunks' rows are written here and their vectors
        handed to the lane (two speeds)."""
        if not built:
            return
        observations = [obs for obs, _, _ in built]
        lane = ctx.lane  # two speeds: the memories now, their chunks' vectors later
        chunks = [] if lane is not None else [c for _, cs, _ in built for c in cs]
        texts, dense = plan
        vectors = self._embed(texts, ctx.prepared)
        count = len(observations)
        known: dict[str, SparseVector] = {}  # sparse vectors computed when the index reads
        self.index.upsert_memories(observations, vectors[:count], SparseVectors(
            [_lexical_text(o) for o in observations], known))
        if lane is not None:
            lane.defer(built)
        elif chunks:
            self.index.upsert_chunks(chunks, dense_column(dense, vectors[count:]),
                                     SparseVectors([c.text for c in chunks], known))
        many = isinstance(self.memories, BatchedMemoryWrites)
        if isinstance(self.memories, BatchedMemoryWrites):  # issue 14: two statements
            self.memories.upsert_memories(observations)
            self.memories.put_chunks([c for _, own, _ in built for c in own])
        with self._hooks_batched(observations if many else None):
            for observation, own, _ in built:
                if not many:
                    self.memories.upsert_memory(observation)
                    self.memories.put_chunks(own)
                if self.on_observation is not None:
                    self.on_observation(observation)

    def _plan(self, built: Sequence[Built], ctx: BatchContext
              ) -> tuple[list[str], list[str | None]]:
        """What :meth:`_write_memories` embeds: the memories' texts, then their chunks'
        dense texts (unless the passage lane embeds those later); and every chunk's dense
        text or None (every chunk of ``built`` in order; empty with a passage lane)."""
        texts = [memory_dense_text((obs.summary, obs.retrieve_when, " ".join(obs.tags)),
                                   obs.query_hints) for obs, _, _ in built]
        if ctx.lane is not None:
            return texts, []
        dense = [t for _, _, own in built for t in own]  # embed less: processors.embed_digest
        return texts + to_embed(dense), dense

    def embeds_slowly(self) -> bool:
        """True when a batch's embedding outweighs processing it once more (measured
        seconds per text above ``SLOW_EMBED_SECONDS_PER_TEXT`` and above the processing's)
        and a rehearsal has no outside effect (no LLM observer, which would be called
        twice)."""
        embed, process = self.embed_seconds_per_text, self.process_seconds_per_text
        return (self.observer is None and embed is not None and process is not None
                and embed > max(SLOW_EMBED_SECONDS_PER_TEXT, process))

    def _timed_processing(self, seconds: float, texts: int) -> None:
        if texts:
            last, per_text = self.process_seconds_per_text, seconds / texts
            self.process_seconds_per_text = (
                per_text if last is None else 0.7 * last + 0.3 * per_text)

    def prepare(self, texts: Sequence[str]) -> dict[str, Sequence[float]]:
        """Embed ``texts`` now (the caller holds no store lock) for the next batch: pass
        the answer as that batch's ``BatchContext.prepared``."""
        todo = list(dict.fromkeys(texts))
        return dict(zip(todo, self._timed_embed(todo), strict=True)) if todo else {}

    def _embed(self, texts: list[str], prepared: Mapping[str, Sequence[float]]
               ) -> list[Sequence[float]]:
        if not prepared:
            return list(self._timed_embed(texts))
        todo = [t for t in dict.fromkeys(texts) if t not in prepared]
        fresh = dict(zip(todo, self._timed_embed(todo), strict=True)) if todo else {}
        return [prepared[t] if t in prepared else fresh[t] for t in texts]

    def _timed_embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        started = time.perf_counter()
        vectors = self.embedder.embed_passages(texts)
        if texts:
            per_text = (time.perf_counter() - started) / len(texts)
            last = self.embed_seconds_per_text
            self.embed_seconds_per_text = per_text if last is None else 0.7 * last + 0.3 * per_text
        return vectors

    def _hooks_batched(self, written: Sequence[Observation] | None
                       ) -> AbstractContextManager[None]:
        """The hooks' batching (``LifecycleService.batch``) around a batch's hooks, with
        this batch's raw events and its memories when already ``written`` (issue 14:
        fewer reads)."""
        if self.hooks is None:
            return nullcontext()
        batch = self.hooks.batch
        if written is None:
            return batch(raw=self.raw, memories=None)
        keys: dict[str, set[str]] = {}
        for o in written:
            keys.setdefault(o.user_id, set()).update(f.key for f in o.facts)
        return batch(raw=self.raw, memories=[(o.user_id, o.id) for o in written],
                     fact_keys={user_id: sorted(ks) for user_id, ks in keys.items()})

    # ------------------------------------------------------------------ helpers
    def reject(
        self, reason: str, fld: str | None, raw_text: str | None, entry: Any = None,
        source: str | None = None, letters: DeadLetterStore | None = None,
    ) -> HandleResult:
        """Keep a refused input in the dead-letter store (``letters``, default the service's
        own) with its reason (``source``: who refused it, default this service's input:
        ``processor`` when a driver gave up)."""
        payload = raw_text if raw_text is not None else orjson.dumps(entry).decode()
        letter = DeadLetter(
            reason=reason,
            payload=payload,
            received_at=self.clock(),
            field=fld,
            source=source or self.source,
            event_id=_str_or_none(entry, "event_id"),
            user_id=_str_or_none(entry, "user_id"),
        )
        log.warning("dead letter: %s (event_id=%s)", reason, letter.event_id)
        (letters or self.dead_letters).put_dead_letter(letter)
        return HandleResult("rejected", reason=reason)


def _lexical_text(observation: Observation) -> str:
    """The text of the sparse recall surface: hints weigh as much as the summary."""
    return "\n".join(
        [observation.summary, " ".join(observation.tags), " ".join(observation.query_hints)]
    )


def _str_or_none(entry: Any, name: str) -> str | None:
    if isinstance(entry, dict) and isinstance(entry.get(name), str):
        return str(entry[name])
    return None

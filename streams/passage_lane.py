"""Two speeds: a closed range's memory first, its passage vectors after.

With a lane attached (``IngestService.passage_lane``), a batch embeds and indexes only the
memories it closes (summary + hints: one text each) and writes every SQL row (memories and
chunks) in its transaction; the chunks' dense + sparse vectors — most of the embedding
work for a long tool output — are *deferred* to this lane. The runner applies the log first
and gives the lane a slice (about one embedder batch of texts) between log batches, so a
2,000-line log in one thread no longer holds the memories of every other thread closed in
the same batch.

Crash-exact: deferring writes ``passages_pending/<[user, memory id]>`` in the batch's own
transaction; the lane drops it only after the chunk vectors are upserted (an upsert by id
is idempotent). After a restart :meth:`PassageLane.recover` reloads the chunks of every
pending memory from the SQL store and finishes them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import orjson

from breadcrumb.processors.embed_digest import dense_column, dense_texts, to_embed
from breadcrumb.processors.lexical import sparse_vector
from breadcrumb.stores.ports.tables import Counters
from breadcrumb.topics.records import Chunk, Observation

PENDING = "passages_pending/"
# (user_id, memory_id, its chunks, the text of each one's dense vector or None: embed_digest)
Deferred = tuple[str, str, list[Chunk], list[str | None]]


def pending_name(user_id: str, memory_id: str) -> str:
    return PENDING + orjson.dumps([user_id, memory_id]).decode()


class PassageLane:
    """Chunks whose vectors still have to be written, oldest memory first."""

    def __init__(self, derived: Counters, service: Any, texts_per_slice: int = 32) -> None:
        self.derived = derived  # counters (the pending marks), in the batch's transaction
        self.service = service  # its embedder, index and memory store
        self.texts_per_slice = max(1, texts_per_slice)
        self.queue: deque[Deferred] = deque()
        self._staged: list[Deferred] = []  # deferred by the open transaction

    @property
    def pending(self) -> int:
        """Memories whose passage vectors are not written yet."""
        return len(self.queue)

    def recover(self) -> int:
        """Queue the memories a previous run deferred but did not finish."""
        names = [n for n in self.derived.get_counters() if n.startswith(PENDING)]
        for name in sorted(names):
            user_id, memory_id = orjson.loads(name[len(PENDING):])
            chunks = self.service.memories.get_chunks(user_id, memory_id)
            self.queue.append((user_id, memory_id, chunks, dense_texts(chunks,
                                                                       self._kinds(chunks))))
        return len(names)

    def _kinds(self, chunks: Sequence[Chunk]) -> dict[str, str]:
        """The kinds of the events these chunks (of one memory: one thread) are cut from."""
        if not chunks:
            return {}
        first = chunks[0]
        events = self.service.raw.get_range(first.user_id, first.thread_id,
                                            min(c.event_index for c in chunks),
                                            max(c.event_index for c in chunks))
        return {e.event_id: e.kind for e in events}

    def defer(self, built: Sequence[tuple[Observation, list[Chunk], list[str | None]]]
              ) -> None:
        """Take these memories' chunks and their dense texts (call inside the transaction
        writing them)."""
        for observation, chunks, dense in built:
            if chunks:
                self.derived.set_counter(pending_name(observation.user_id, observation.id),
                                         len(chunks))
                self._staged.append((observation.user_id, observation.id, list(chunks),
                                     list(dense)))

    def committed(self) -> None:
        """The transaction that deferred them committed: they are now due."""
        self.queue.extend(self._staged)
        self._staged.clear()

    def discard(self) -> None:
        """The transaction rolled back: what it deferred was never written."""
        self._staged.clear()

    def work(self) -> int:
        """Write the vectors of the oldest memories' chunks (dense only for the chunks
        ``embed_digest.dense_texts`` gave a text: its own, or a long output's digest), at most
        ``texts_per_slice`` chunks (a long tool output spans several slices) in ONE embedding call
        and one upsert; a memory's mark is dropped with its last chunk. Returns the chunks written
        plus the memories finished (0: nothing was due)."""
        plan: list[tuple[int, int]] = []  # (queue position, chunks taken from its head)
        budget = self.texts_per_slice
        for position, (_user, _memory, own, _mask) in enumerate(self.queue):
            if budget <= 0:
                break
            take = min(len(own), budget)
            plan.append((position, take))
            budget -= take
        if not plan:
            return 0
        chunks = [c for position, take in plan for c in self.queue[position][2][:take]]
        dense = [t for position, take in plan for t in self.queue[position][3][:take]]
        if chunks:
            texts = to_embed(dense)
            vectors = self.service.embedder.embed_passages(texts) if texts else []
            self.service.index.upsert_chunks(chunks, dense_column(dense, vectors),
                                             [sparse_vector(c.text) for c in chunks])
        finished = [self.queue[p][:2] for p, take in plan if take == len(self.queue[p][2])]
        if finished:
            self.derived.drop_counters([pending_name(u, m) for u, m in finished])
        last, take = plan[-1]
        user, memory, own, own_dense = self.queue[last]
        if take < len(own):  # only the last memory of a slice can be partly done
            self.queue[last] = (user, memory, own[take:], own_dense[take:])
        for _ in range(len(finished)):
            self.queue.popleft()
        return len(chunks) + len(finished)

"""A slow embedder embeds a batch's texts outside the store lock (issue 14): the batch is
rehearsed in a rolled-back transaction to learn its texts, they are embedded while other
threads can read the store, then the batch is applied for real in one transaction. The
memories, vectors and counters equal those of a fast embedder's run."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.streams.service import SLOW_EMBED_SECONDS_PER_TEXT
from tests.e2e.test_derive_batches import _derive, _events, _runtime, _snapshot, _users


class SlowEmbedder(HashEmbedder):
    """The hash embedder taking 4 x the slow threshold per text (a sleep: like an ONNX
    model, it releases the GIL). Each call probes whether another thread could take the
    store's write lock meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.store: Any = None
        self.store_free: list[bool] = []  # per call: could another thread write the store?

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        if self.store is not None and texts:  # reads never wait (sqlite_readers): a writer
            free: list[bool] = []

            def take_lock() -> None:
                got = self.store.db.lock.acquire(timeout=2.0)
                if got:
                    self.store.db.lock.release()
                free.append(got)

            writer = threading.Thread(target=take_lock, daemon=True)
            writer.start()
            writer.join(5.0)
            self.store_free.append(free == [True])
        time.sleep(4 * SLOW_EMBED_SECONDS_PER_TEXT * len(texts))
        return super().embed_passages(texts)


def test_a_slow_embedder_embeds_outside_the_store_lock_with_the_same_results(
        tmp_path: Path) -> None:
    events = _events(600)
    slow_embedder = SlowEmbedder()
    fast = _runtime(tmp_path / "fast", 32, HashEmbedder())
    slow = _runtime(tmp_path / "slow", 32, slow_embedder)
    slow_embedder.store = slow.derived_store()
    try:
        _derive(fast, events)
        _derive(slow, events)
        probes = slow_embedder.store_free
        # the first batch embeds in its transaction (the embedder is not measured yet; the
        # probe sees the lock held); every later call comes with the store free
        assert len(probes) >= 3
        assert probes[0] is False
        assert all(probes[1:]), probes
        assert _snapshot(slow, _users(events)) == _snapshot(fast, _users(events))
        assert slow.index.count() == fast.index.count()
        counters, expected = slow.gateway.counters(), fast.gateway.counters()
        for name in ("events_processed", "flushes", "duplicates", "dead_lettered"):
            assert counters.get(name, 0) == expected.get(name, 0), name
        assert slow.gateway.unprocessed() == 0
        fast_service: Any = fast.gateway.service  # type: ignore[attr-defined]
        # the hash embedder is never rehearsed: it stays far below the slow threshold (a few
        # microseconds a text against 2 ms), whatever the machine's load does to the ratio of
        # embedding to processing (CI once saw 0.116 ms vs 0.092 ms a text)
        assert fast_service.embed_seconds_per_text < SLOW_EMBED_SECONDS_PER_TEXT
        assert not fast_service.embeds_slowly()
    finally:
        fast.stop()
        slow.stop()

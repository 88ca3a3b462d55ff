"""Recall uses coalesced into one write per window (query_api.recall.usage), on the real store."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

from breadcrumb.query_api.recall.usage import UsageWriter, layers
from breadcrumb.stores.sql.base import SqlStore
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from tests.unit.stores.test_sqlite_store import obs


def test_layers_count_each_use_and_keep_the_newest_time() -> None:
    uses = [("a", ["m1", "m2", "m1"], "t1"), ("a", ["m1"], "t3"), ("b", ["x"], "t2"),
            ("a", ["m2", "m1"], "t2")]
    assert layers(uses) == [("a", ["m1"], "t3"), ("a", ["m2"], "t2"), ("a", ["m1"], "t3"),
                            ("a", ["m2"], "t2"), ("a", ["m1"], "t3"), ("b", ["x"], "t2")]
    assert layers([]) == []


def _hits(store: SqlStore, mid: str) -> tuple[int, str | None]:
    row = store.memories.get_memory_row("alice", mid) or {}
    return row["hit_count"], row["last_used_at"]


def test_a_window_of_recalls_is_one_transaction_with_every_hit(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "s.sqlite3") as store:
        for mid in ("m1", "m2"):
            store.memories.upsert_memory(obs(mid))
        commits = []
        real_commit = store.db._commit

        def counted() -> None:
            commits.append(1)
            real_commit()

        store.db._commit = counted  # type: ignore[method-assign]
        writer = UsageWriter(store.memories, Counter(), linger_s=30.0)  # nothing written on its own
        writer.record("alice", ["m1", "m2"], "2025-01-02T00:00:00+00:00")
        writer.record("alice", ["m1"], "2025-01-02T00:00:05+00:00")
        writer.record("alice", ["m1"], "2025-01-02T00:00:03+00:00")
        assert _hits(store, "m1") == (0, None)  # lingering: not written yet
        writer.flush()  # at once, not after the 30 s window
        assert _hits(store, "m1") == (3, "2025-01-02T00:00:05+00:00")
        assert _hits(store, "m2") == (1, "2025-01-02T00:00:00+00:00")
        assert len(commits) == 1
        writer.flush()  # nothing pending: no write
        assert len(commits) == 1


def test_uses_are_written_within_the_window_without_a_flush(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "s.sqlite3") as store:
        store.memories.upsert_memory(obs("m1"))
        written = threading.Event()
        real_commit = store.db._commit

        def committed() -> None:
            real_commit()
            written.set()

        store.db._commit = committed  # type: ignore[method-assign]
        UsageWriter(store.memories, Counter(), linger_s=0.05).record("alice", ["m1"], "t-1")
        assert written.wait(10)
        assert _hits(store, "m1") == (1, "t-1")


class _Broken:
    def record_usage(self, *_: Any) -> None:
        raise RuntimeError("disk gone")


def test_a_failed_write_is_counted_not_raised() -> None:
    errors: Counter[str] = Counter()
    writer = UsageWriter(_Broken(), errors, linger_s=30.0)  # type: ignore[arg-type]
    writer.record("alice", ["m1"], "t-1")
    writer.flush()
    assert errors["usage"] == 1

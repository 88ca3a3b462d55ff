"""Archive → real S3-compatible endpoint → restore: byte-identical evidence."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from breadcrumb.infra.bootstrap import build_lifecycle
from breadcrumb.settings import Settings
from breadcrumb.stores.cold.storage import S3ColdStore, archive_key, pack_events
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex
from breadcrumb.topics.records import Event, Observation, SourceRange

pytestmark = pytest.mark.integration


def test_archive_to_s3_and_restore_byte_identical(tmp_path: Path) -> None:
    cold = S3ColdStore("http://127.0.0.1:9000", "breadcrumb-archive", "us-east-1", "breadcrumb",
                       "breadcrumb-secret")
    cold.ensure()
    store = SqliteStore(tmp_path / "s.sqlite3")
    store.open()
    index = QdrantEdgeIndex(tmp_path / "v", 8)
    index.ensure()
    user = f"u-{uuid.uuid4().hex[:8]}"
    life, raw = build_lifecycle(Settings(data_dir=tmp_path), store, index, cold)
    events = [Event(f"e{i}", user, "t/1", f"2024-05-01T00:0{i}:00Z", "tool", "tool_result",
                    f"line {i} ü 日本 \u00a0 tab\t end", index=i, tokens=3) for i in range(5)]
    for e in events:
        store.events.put_event(e)
    mem = Observation("m-" + user, user, None, "s", SourceRange("t/1", 0, 4), (), (), "", 0.5,
                      events[-1].ts)
    store.memories.upsert_memory(mem)
    key = life.archiver.archive(mem)
    assert key == archive_key(user, "t/1", 0, 4)
    assert cold.get_object(key) == pack_events(events)
    assert store.events.get_range(user, "t/1", 0, 4) == []
    assert raw.get_range(user, "t/1", 0, 4) == events
    assert raw.get_event(user, "e3") == events[3]
    assert life.archiver.restore(mem) == 5
    assert pack_events(store.events.get_range(user, "t/1", 0, 4)) == pack_events(events)
    cold.delete_object(key)
    store.close()
    index.close()

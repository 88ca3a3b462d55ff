"""Issue 14 on the real MariaDB: the batch's deferred status changes and kept
``memory_facts`` (``stores.sql.facts_batch``, ``stores.sql.facts_model``) leave every table and
every published record as the statement-per-change path does, on the golden corpus
(several copies: duplicates, supersessions, verifications), in batches and one at a time."""

from __future__ import annotations

import asyncio
import itertools
import json
import tempfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bench.cluster_derive import NullIndex, drive, messages_for
from bench.replay import copies
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.sql import facts_batch
from tests.integration.conftest import drop_database, fresh_database

pytestmark = pytest.mark.integration


class _Sink:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None, str | None]] = []

    async def send(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        self.sent.append((topic, key and key.decode(), value and value.decode()))


def _ticking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every clock read one microsecond later: both runs store the same times."""
    import breadcrumb.infra.parts as parts
    import breadcrumb.infra.worker_parts as worker_parts

    tick, base = itertools.count(), datetime(2026, 12, 1, tzinfo=UTC)

    def now() -> datetime:
        return base + timedelta(microseconds=next(tick))
    monkeypatch.setattr(parts, "utc_now", now)
    monkeypatch.setattr(worker_parts, "utc_now_iso", lambda: now().isoformat())


def _derive(batch: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    from breadcrumb.infra.worker_parts import build_worker_parts

    _ticking(monkeypatch)
    sink, name = _Sink(), fresh_database(f"same_{uuid.uuid4().hex[:8]}")
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(mode="cluster", data_dir=Path(tmp), embedder="hash",
                            mysql_database=name)
        parts = build_worker_parts(settings, HashEmbedder(), NullIndex())
        try:
            asyncio.run(drive(parts, messages_for(copies(4)), batch, sink=sink))
            out: dict[str, Any] = {"sent": sink.sent}
            for (table,) in parts.store.db.fetch("SHOW TABLES"):
                rows = parts.store.db.fetch(f"SELECT * FROM {table}")
                if table == "thread_state":  # its updated_at is the store's own clock
                    rows = [r[:3] for r in rows]
                out[str(table)] = sorted(json.dumps([str(v) for v in r]) for r in rows)
            return out
        finally:
            parts.close()
            drop_database(name)


@pytest.mark.parametrize("batch", [1, 16, 256])
def test_deferred_lifecycle_writes_leave_what_one_statement_each_leaves(
        batch: int, monkeypatch: pytest.MonkeyPatch) -> None:
    new = _derive(batch, monkeypatch)
    with monkeypatch.context() as old:  # every change its own statement, as before
        old.setattr(facts_batch, "kept_facts", lambda *_args: None)
        old.setattr(facts_batch.BatchedLifecycleTables, "apply_status_change",
                    lambda self, change, _values: self.store.memories.apply_status_change(change))
        before = _derive(batch, old)
    assert len(new["agent_memories"]) > 20 and len(new["memory_audit"]) > 20
    assert any("superseded" in r for r in new["memory_facts"])
    for table in sorted(set(new) | set(before)):
        assert new.get(table) == before.get(table), table

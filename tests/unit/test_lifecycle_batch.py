"""``LifecycleService.batch`` (issue 14): payload updates made inside the block are written
once per memory at its end (final values, grouped), and not at all when it fails."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from breadcrumb.streams.lifecycle.service import CollectingChangelog, LifecycleService


class _Index:
    """Records the batch call (a unit test of one class: the real index has its own tests)."""

    def __init__(self) -> None:
        self.calls: list[list[tuple[list[str], dict[str, Any]]]] = []

    def set_memory_payloads(self, updates: list[tuple[list[str], dict[str, Any]]]) -> list[str]:
        self.calls.append(updates)
        return [m for ids, _ in updates for m in ids if m == "gone"]


def _service(index: _Index) -> LifecycleService:
    return LifecycleService(None, None, index, None, CollectingChangelog(),  # type: ignore[arg-type]
                            lambda: datetime(2025, 1, 1, tzinfo=UTC))


def test_batch_writes_each_memory_once_with_final_values() -> None:
    index = _Index()
    service = _service(index)
    with service.batch():
        service._payload("m1", {"status": "active", "tier": "provisional"})
        service._payload("m2", {"status": "superseded", "tier": "confirmed"})
        service._payload("m1", {"status": "superseded", "tier": "confirmed"})
        service._payload("gone", {"status": "active", "tier": "active"})
        assert index.calls == []
    assert len(index.calls) == 1
    groups = {tuple(ids): values for ids, values in index.calls[0]}
    assert groups == {("m1", "m2"): {"status": "superseded", "tier": "confirmed"},
                      ("gone",): {"status": "active", "tier": "active"}}
    assert service.errors["missing_point"] == 1


def test_failed_batch_writes_no_payload() -> None:
    index = _Index()
    service = _service(index)
    with pytest.raises(RuntimeError), service.batch():
        service._payload("m1", {"status": "archived", "tier": "active"})
        raise RuntimeError("batch failed")
    assert index.calls == []
    with service.batch():  # the next batch starts clean
        pass
    assert index.calls == []


class _AuditStore:
    """Records audit writes (one row at a time or many in one call)."""

    def __init__(self) -> None:
        self.calls: list[list[tuple[Any, ...]]] = []
        self.audit = self  # the store's audit trail

    def add_audit(self, *row: Any) -> None:
        self.calls.append([row])

    def add_audits(self, rows: list[tuple[Any, ...]]) -> None:
        self.calls.append(list(rows))


def test_batch_writes_its_audit_rows_in_order_with_one_call() -> None:
    store = _AuditStore()
    service = LifecycleService(store, None, _Index(), None, CollectingChangelog(),  # type: ignore[arg-type]
                               lambda: datetime(2025, 1, 1, tzinfo=UTC))
    rows = [("m1", "u", "t1", "pipeline", "status", "active", "superseded", "dup"),
            ("m2", "u", "t2", "pipeline", "tier", "provisional", "confirmed", "verified")]
    with service.batch():
        for row in rows:
            service._audit(*row)
        assert store.calls == []  # nothing before the batch's end
    assert store.calls == [rows]
    service._audit(*rows[0])  # outside a batch: at once
    assert store.calls[-1] == [rows[0]]
    with pytest.raises(RuntimeError), service.batch():
        service._audit(*rows[1])
        raise RuntimeError("batch failed")
    assert len(store.calls) == 2  # a failed batch writes none

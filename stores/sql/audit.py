"""The audit trail of a SQL store: who changed which field of a memory, when and why."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import SqlDatabase


class SqlAudit:
    """The ``memory_audit`` table (append and read): ``AuditTrail`` (:mod:`stores.ports`)."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    def add_audit(self, memory_id: str, user_id: str, at: str, actor: str, field: str,
                  from_value: str | None, to_value: str | None, reason: str | None) -> None:
        """Append one audit row (who changed which field of a memory, when and why)."""
        with self.db.transaction():
            self.db.execute(s.INSERT_AUDIT,
                          (memory_id, user_id, at, actor, field, from_value, to_value, reason))

    def add_audits(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Issue 14: :meth:`add_audit` for many rows (its arguments, in order), one
        statement."""
        if rows:
            with self.db.transaction():
                self.db.execute_many(s.INSERT_AUDIT, rows)

    def list_audit(self, user_id: str, memory_id: str) -> list[dict[str, Any]]:
        """The memory's audit rows (this user's only), oldest first; keys = column names."""
        rows = self.db.read(f"{s.SELECT_AUDIT} WHERE user_id = ? AND memory_id = ? ORDER BY id",
                          (user_id, memory_id))
        return [dict(zip(s.AUDIT_COLUMNS, r, strict=True)) for r in rows]

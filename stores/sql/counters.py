"""Named counters of a SQL store (``kv_counters``): intake and processing counts, a
generation's cursor into the log, the fair runner's per-thread marks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from breadcrumb.stores.sql.core import SqlDatabase


class SqlCounters:
    """The ``kv_counters`` table (``Counters``, :mod:`stores.ports`)."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db

    def incr(self, name: str, n: int = 1) -> None:
        """Add ``n`` to a named counter (created at 0)."""
        sql = self.db.dialect.upsert("kv_counters", ("name", "value"), ("name",), add=("value",))
        with self.db.transaction():
            self.db.execute(sql, (name, n))

    def incr_many(self, counts: Mapping[str, int]) -> None:
        """Issue 14: :meth:`incr` for many counters in one statement (in name order, so two
        writers lock the rows in the same order)."""
        rows = [(name, n) for name, n in sorted(counts.items()) if n]
        if rows:
            sql = self.db.dialect.upsert("kv_counters", ("name", "value"), ("name",),
                                         add=("value",))
            with self.db.transaction():
                self.db.execute_many(sql, rows)

    def set_counter(self, name: str, value: int) -> None:
        """Set a named counter (e.g. a generation's ``applied_seq`` cursor into the log)."""
        sql = self.db.dialect.upsert("kv_counters", ("name", "value"), ("name",), ("value",))
        with self.db.transaction():
            self.db.execute(sql, (name, value))

    def drop_counters(self, names: Sequence[str]) -> None:
        """Remove named counters (absent names are ignored)."""
        with self.db.transaction():
            for name in names:
                self.db.execute("DELETE FROM kv_counters WHERE name = ?", (name,))

    def get_counters(self) -> dict[str, int]:
        """Every counter by name."""
        return {str(k): int(v) for k, v in self.db.read("SELECT name, value FROM kv_counters")}

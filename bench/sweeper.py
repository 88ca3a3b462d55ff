"""Sweeper cost per N memories (default 100k) on SQLite, against a bare SELECT of the same rows.

    python bench/sweeper.py [N]

Rows are inserted straight into ``agent_memories``; the vector index is a no-op, so the
figure is the sweep's own cost (row scan + rule evaluation + writes for due changes).
"""

from __future__ import annotations

import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from breadcrumb.stores.cold.storage import LocalColdStore  # noqa: E402
from breadcrumb.stores.sql import schema as s  # noqa: E402
from breadcrumb.stores.sql.sqlite.store import SqliteStore  # noqa: E402


class _NoIndex:
    def set_memory_payload(self, memory_id: str, values: dict[str, Any]) -> None:
        return None


def main(n: int) -> None:
    from breadcrumb.infra.bootstrap import build_lifecycle
    from breadcrumb.settings import Settings

    tmp = Path(tempfile.mkdtemp())
    store = SqliteStore(tmp / "b.sqlite3")
    store.open()
    t0 = datetime(2024, 5, 1, tzinfo=UTC)
    rows = [(f"m{i:08d}", f"u{i % 50}", "p", "observation", "s", "t", 0, 1, "[]", "[]", "", 0.5,
             "active", "provisional", None, "[]", "{}", t0.isoformat(), t0.isoformat())
            for i in range(n)]
    with store.transaction():
        store.db.execute_many(s.insert_sql("agent_memories", s.MEMORY_COLUMNS), rows)
    life, _ = build_lifecycle(Settings(data_dir=tmp), store, _NoIndex(), LocalColdStore(tmp))
    started = time.perf_counter()
    count = len(store.db.read("SELECT * FROM agent_memories WHERE status <> 'archived'"))
    base = time.perf_counter() - started
    started = time.perf_counter()
    quiet = life.sweep(t0 + timedelta(hours=1))  # nothing due: scan + rules only
    sweep = time.perf_counter() - started
    print(f"memories={count} baseline_select_s={base:.3f} sweep_nothing_due_s={sweep:.3f} "
          f"ratio={sweep / base:.1f}x changes={sum(quiet.values())}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)

"""Disk per stored event, table by table, of an embedded data dir (issue 49: each event's
text stored once).

Builds a data dir from generated coding-agent events (``bench.soak_events.SoakAgent``:
real-session-sized file reads, pytest logs and diffs; seeded, so every run stores the same
texts) with the hash embedder, or measures an existing one (``--measure DIR``: e.g. a data
dir built by an older version, opened once by this one to migrate it). Each SQLite file is
copied and ``VACUUM``-ed first (free pages left by a migration or a delete are not data),
then its tables' and indexes' pages are summed (``dbstat``); the vector store's files are
given whole, apart.

    python -m bench.text_bytes --events 3000 --data-dir DIR      # build + measure
    python -m bench.text_bytes --measure DIR [--open]            # measure (open: migrate first)
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from bench.soak_events import SoakAgent
from bench.soak_targets import du


def generate(events: int, agents: int = 8, seed: int = 49) -> list[dict[str, Any]]:
    """``events`` events of ``agents`` simulated coding agents, the same on every run."""
    fleet = [SoakAgent(n, f"tb{seed}", users=3, user_prefix="tb-user") for n in range(agents)]
    for agent in fleet:
        agent.rng = random.Random(f"{seed}/{agent.number}")
    out: list[dict[str, Any]] = []
    while len(out) < events:
        for agent in fleet:
            event = agent.next_event()
            event["ts"] = f"2026-12-06T12:{len(out) // 60 % 60:02d}:{len(out) % 60:02d}Z"
            out.append(event)
    return out[:events]


def build(path: Path, events: int) -> dict[str, Any]:
    """Ingest the generated events into a fresh data dir at ``path`` (hash embedder)."""
    from breadcrumb.eval.runner import ingest
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.settings import Settings
    from breadcrumb.stores.embedders.models import HashEmbedder

    rt = build_runtime(Settings(data_dir=path), embedder=HashEmbedder())
    rt.start()
    try:
        return ingest(rt, generate(events), timeout=3600)
    finally:
        rt.stop()


def open_once(path: Path) -> None:
    """Open the data dir's stores (runs their schema upgrades) and close them."""
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.settings import Settings
    from breadcrumb.stores.embedders.models import HashEmbedder

    build_runtime(Settings(data_dir=path), embedder=HashEmbedder()).stop()


def table_bytes(db: Path) -> dict[str, int]:
    """Bytes of each table (its indexes included) of a VACUUM-ed copy of ``db``."""
    with tempfile.TemporaryDirectory(prefix="bc-bytes-") as tmp:
        copy = Path(tmp) / "copy.sqlite3"
        src = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            src.execute(f"VACUUM INTO '{copy}'")
        finally:
            src.close()
        conn = sqlite3.connect(copy)
        try:
            index_of = dict(conn.execute(
                "SELECT name, tbl_name FROM sqlite_schema WHERE type = 'index'").fetchall())
            out: dict[str, int] = {}
            for name, size in conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
                table = index_of.get(name, name)
                out[table] = out.get(table, 0) + int(size)
            return out
        finally:
            conn.close()


def measure(path: Path) -> dict[str, Any]:
    """Per table bytes per stored event, of every SQLite file under ``path``."""
    files = sorted(p for p in path.rglob("*.sqlite3"))
    tables: dict[str, int] = {}
    events = 0
    for db in files:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema")}
            if "raw_events" in names:
                events = max(events, int(conn.execute(
                    "SELECT COUNT(*) FROM raw_events").fetchone()[0]))
        finally:
            conn.close()
        for table, size in table_bytes(db).items():
            key = f"{db.relative_to(path)}:{table}"
            tables[key] = tables.get(key, 0) + size
    sql_total = sum(tables.values())
    per = {k: round(v / max(events, 1)) for k, v in sorted(tables.items()) if v >= 8192}
    return {"stored_events": events, "sql_bytes": sql_total,
            "sql_bytes_per_event": round(sql_total / max(events, 1)),
            "data_dir_bytes_allocated": du(path), "bytes_per_event_by_table": per}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--data-dir", type=Path, help="build here (must not exist)")
    parser.add_argument("--measure", type=Path, help="measure this data dir only")
    parser.add_argument("--open", action="store_true",
                        help="with --measure: open the data dir once first (schema upgrade)")
    args = parser.parse_args()
    if args.measure is not None:
        if args.open:
            open_once(args.measure)
        print(json.dumps(measure(args.measure), indent=1))
        return
    if args.data_dir is None:
        parser.error("--data-dir or --measure")
    if args.data_dir.exists():
        shutil.rmtree(args.data_dir)
    print(json.dumps({"ingest": build(args.data_dir, args.events)}))
    print(json.dumps(measure(args.data_dir), indent=1))


if __name__ == "__main__":
    main()

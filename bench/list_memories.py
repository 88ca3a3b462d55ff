"""Listing and filtering memories at N memories (default 100k): ``GET /v1/memories``
p50 / p95 per query shape, each against a bare SQL read of the same page in the same run.

    nice python bench/list_memories.py [N] [--rounds R]

One embedded runtime (hash embedder: nothing is derived); N memory rows are written
straight into ``agent_memories`` of one tenant (the worst case: every row is the
tenant's), plus 2% for another tenant. Rows vary as real ones do: 2,000 threads, 5
projects, statuses 90/8/2 % active/superseded/archived, three tiers, 2-4 tags of 30,
importance and hit counts spread, summaries of random words.

Each round asks every shape three ways, interleaved so all see the same machine state:

* ``view``: what the server does for the request (``routes.browse.list_view``: filter
  checks, the keyset read, rows decoded to the Memory shape, the cursor) plus the orjson
  encoding of the answer;
* ``http``: the same through the app in process (Starlette's TestClient: routing, the
  security middleware, validation, a thread hop each way; on a loaded machine the hops
  dominate, so the TestClient's own cost is printed too: ``GET /healthz``);
* ``sql``: a bare SQL statement reading the same page (same WHERE, ORDER BY, LIMIT 51),
  fetched, not decoded; for a text filter, the same windowed statement the API runs
  (the matches among ``sql_browse.TEXT_WINDOW`` rows of the order: a LIKE '%…%' has no
  index).

"deep" follows the cursor 20 pages and times the 20th page. Ratios are p50 / p50 sql.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson  # noqa: E402

from breadcrumb.stores.sql import schema as s  # noqa: E402

USER = "bench-user"
WORDS = ("deploy database port token regex cache migration auth email backup cron image "
         "pin health docs test fixture retry queue kafka topic partition offset pgbouncer "
         "vector index shard snapshot replay tenant key role audit").split()
TAGS = [f"tag{i:02d}" for i in range(30)]


def rows(n: int, rng: random.Random) -> list[tuple[Any, ...]]:
    out = []
    for i in range(n):
        user = USER if i % 50 else "other-user"
        status = rng.choices(["active", "superseded", "archived"], [90, 8, 2])[0]
        day, minute = divmod(i, 1440)
        created = f"2026-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}T{minute // 60:02d}:" \
                  f"{minute % 60:02d}:{i % 60:02d}Z"
        summary = " ".join(rng.choice(WORDS) for _ in range(14))
        tags = s.dumps(rng.sample(TAGS, rng.randint(2, 4)))
        out.append((f"m-{i:08d}", user, f"proj{i % 5}", "observation", summary,
                    f"thread-{i % 2000:04d}", 0, 10, tags, "[]", "when asked", rng.random(),
                    status, rng.choice(["provisional", "confirmed", "active"]), None, "[]", "{}",
                    created, created, rng.randint(0, 40)))
    return out


SHAPES: dict[str, dict[str, Any]] = {
    "first page (time)": {},
    "sort importance": {"sort": "importance"},
    "sort hits": {"sort": "hits"},
    "status=superseded": {"status": "superseded"},
    "tier=confirmed": {"tier": "confirmed"},
    "project": {"project": "proj3"},
    "thread": {"thread": "thread-0042"},
    "tag": {"tag": "tag07"},
    "text": {"text": "pgbouncer snapshot"},
    "text, no match (scan)": {"text": "no-such-words"},
    "tag+status+sort hits": {"tag": "tag11", "status": "active", "sort": "hits"},
}


def bare_sql(store: Any, params: dict[str, Any]) -> None:
    """The first page of the same query, read and fetched, not decoded."""
    from dataclasses import replace

    from breadcrumb.stores.sql.browse import SORTS, TEXT_WINDOW, MemoryFilter, _where

    flt = MemoryFilter(USER, params.get("project"), params.get("thread"), params.get("status"),
                       params.get("tier"), params.get("tag"), params.get("text"))
    column = SORTS[params.get("sort", "time")][0]
    if flt.text is not None:  # the API matches within a window of the order: the same read
        where, args = _where(replace(flt, text=None))
        match, margs = _where(MemoryFilter("", text=flt.text))
        store.db.read(f"SELECT * FROM (SELECT * FROM agent_memories WHERE {' AND '.join(where)} "
                    f"ORDER BY {column} DESC, id DESC LIMIT ?) w WHERE {match[-1]} "
                    f"ORDER BY {column} DESC, id DESC LIMIT 51", (*args, TEXT_WINDOW, *margs[1:]))
        return
    where, args = _where(flt)
    store.db.read(f"SELECT * FROM agent_memories WHERE {' AND '.join(where)} "
                f"ORDER BY {column} DESC, id DESC LIMIT 51", args)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", type=int, nargs="?", default=100_000)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    from fastapi.testclient import TestClient

    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.query_api.app import create_app
    from breadcrumb.query_api.routes.browse import list_view
    from breadcrumb.settings import Settings
    from breadcrumb.stores.embedders.models import HashEmbedder

    tmp = Path(tempfile.mkdtemp(prefix="bench-list-"))
    runtime = build_runtime(Settings(data_dir=tmp / "data", embedder="hash"),
                            embedder=HashEmbedder())
    store = runtime.derived_store()
    started = time.perf_counter()
    data = rows(args.n, random.Random(26))
    columns = (*s.MEMORY_COLUMNS, "hit_count")
    with store.transaction():
        for at in range(0, len(data), 5000):
            store.db.execute_many(s.insert_sql("agent_memories", columns), data[at:at + 5000])
    print(f"memories={args.n} (tenant {USER}: {sum(r[1] == USER for r in data)}) "
          f"written in {time.perf_counter() - started:.1f} s")
    with TestClient(create_app(runtime, manage_lifecycle=False)) as http:
        for params in SHAPES.values():  # warm: indexes created on first use, pages cached
            assert http.get("/v1/memories", params={"user_id": USER, **params}).status_code \
                == 200
        results: dict[str, Timings] = {name: ([], [], []) for name in [*SHAPES, DEEP]}
        health: list[float] = []
        for _ in range(args.rounds):
            for name, params in SHAPES.items():
                view, api, sql = results[name]
                view.append(_ms(lambda p=params: orjson.dumps(list_view(runtime, USER, **p))))
                api.append(_ms(lambda p=params: _ok(http.get("/v1/memories",
                                                             params={"user_id": USER, **p}))))
                sql.append(_ms(lambda p=params: bare_sql(store, p)))
            health.append(_ms(lambda: http.get("/healthz")))
            deep(http, runtime, results[DEEP])
    runtime.stop()
    print(f"{'shape':22} {'view p50':>8} {'p95':>7} {'http p50':>8} {'p95':>7} "
          f"{'sql p50':>7} {'p95':>6} {'view/sql':>8} {'http/sql':>8}  (ms, {args.rounds} rounds)")
    for name, (view, api, sql) in results.items():
        base = max(statistics.median(sql), 1e-6)
        print(f"{name:22} {statistics.median(view):8.2f} {pct(view, 0.95):7.2f} "
              f"{statistics.median(api):8.2f} {pct(api, 0.95):7.2f} "
              f"{statistics.median(sql):7.2f} {pct(sql, 0.95):6.2f} "
              f"{statistics.median(view) / base:7.1f}x {statistics.median(api) / base:7.1f}x")
    print(f"TestClient alone (GET /healthz): p50 {statistics.median(health):.2f} ms, "
          f"p95 {pct(health, 0.95):.2f} ms")


Timings = tuple[list[float], list[float], list[float]]
DEEP = "deep (20th page)"


def _ms(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def _ok(response: Any) -> None:
    assert response.status_code == 200, response.text


def deep(http: Any, runtime: Any, into: Timings) -> None:
    """Follow the cursor to the 20th page; time that page three ways."""
    from breadcrumb.query_api.routes.browse import list_view

    cursor = None
    for _ in range(19):
        cursor = http.get("/v1/memories", params={"user_id": USER, **(
            {"cursor": cursor} if cursor else {})}).json()["next_cursor"]
    into[0].append(_ms(lambda: orjson.dumps(list_view(runtime, USER, cursor=cursor))))
    into[1].append(_ms(lambda: _ok(http.get("/v1/memories",
                                            params={"user_id": USER, "cursor": cursor}))))
    db = runtime.derived_store().db
    row = db.read("SELECT created_at, id FROM agent_memories WHERE user_id = ? "
                  "ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET 949", (USER,))[0]
    into[2].append(_ms(lambda: db.read(
        "SELECT * FROM agent_memories WHERE user_id = ? AND (created_at < ? OR "
        "(created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT 51",
        (USER, row[0], row[0], row[1]))))


if __name__ == "__main__":
    main()

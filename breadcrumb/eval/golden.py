"""The golden question set: loading, event selection, label resolution, scoring.

Questions live in ``breadcrumb/eval/data/questions.jsonl`` (package data); each names the
event(s) holding its answer (``expected_event_ids``), its expected classification and,
for exact-value questions, the value. The expected *memory* is whichever memory's ``source_range``
contains a labelled event (ranges depend on segmentation, so they are resolved
against the store after ingest).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from breadcrumb.eval import metrics as m
from breadcrumb.eval.methods import BREADCRUMBS, RAW, Answer

GOLDEN_DIR = Path(__file__).resolve().parent / "data"  # shipped in the wheel
EXACT = "exact_value_needed"


@dataclass(frozen=True, slots=True)
class GoldenQuestion:
    """One labelled question (a line of ``questions.jsonl``)."""

    id: str
    user_id: str
    lang: str
    question: str
    category: str
    expected_event_ids: tuple[str, ...]
    classification: str
    value: str | None = None
    distractor_event_ids: tuple[str, ...] = ()
    stale_values: tuple[str, ...] = ()
    fast: bool = False
    note: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GoldenQuestion:
        return cls(
            id=d["id"], user_id=d["user_id"], lang=d["lang"], question=d["question"],
            category=d["category"], expected_event_ids=tuple(d["expected_event_ids"]),
            classification=d["classification"], value=d.get("value"),
            distractor_event_ids=tuple(d.get("distractor_event_ids", ())),
            stale_values=tuple(d.get("stale_values", ())), fast=bool(d.get("fast")),
            note=d.get("note", ""),
        )

    def threads(self) -> set[tuple[str, str]]:
        """(user, thread) of every labelled event (ids are ``{user}-{thread}-{nnn}``)."""
        return {_thread_of(e) for e in (*self.expected_event_ids, *self.distractor_event_ids)}


def _thread_of(event_id: str) -> tuple[str, str]:
    user, _, rest = event_id.partition("-")
    return user, rest.rsplit("-", 1)[0]


def load_questions(path: Path | None = None, fast: bool = False) -> list[GoldenQuestion]:
    """The golden questions (only the ``fast`` subset when asked)."""
    path = path or GOLDEN_DIR / "questions.jsonl"
    lines = path.read_text("utf-8").splitlines()
    qs = [GoldenQuestion.from_dict(json.loads(line)) for line in lines if line.strip()]
    return [q for q in qs if q.fast] if fast else qs


def load_events(questions: list[GoldenQuestion], only_needed: bool) -> list[dict[str, Any]]:
    """``golden_events()`` (:mod:`breadcrumb.eval.corpus`) then the extra events; only the
    questions' threads if asked."""
    from breadcrumb.eval.corpus import golden_events

    extra = GOLDEN_DIR / "extra_events.jsonl"
    events = golden_events() + [json.loads(x) for x in extra.read_text("utf-8").splitlines()
                                if x.strip()]
    if not only_needed:
        return events
    needed = set().union(*(q.threads() for q in questions)) if questions else set()
    return [e for e in events if (e["user_id"], e["thread_id"]) in needed]


@dataclass(slots=True)
class Labels:
    """A question's labels resolved to spans in the store."""

    events: list[m.Span] = field(default_factory=list)
    memories: list[m.Span] = field(default_factory=list)
    distractors: list[m.Span] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)


def resolve(runtime: Any, q: GoldenQuestion, memory_spans: dict[str, list[m.Span]]) -> Labels:
    """Events → one-event spans; memories → the spans containing a labelled event."""
    labels = Labels()
    for event_id in q.expected_event_ids:
        span = event_span(runtime, event_id)
        if span is None:
            labels.unresolved.append(event_id)
            continue
        labels.events.append(span)
        labels.memories += [s for s in memory_spans.get(span.user_id, []) if s.overlaps(span)]
    for event_id in q.distractor_event_ids:
        span = event_span(runtime, event_id)
        if span is not None:
            labels.distractors.append(span)
    return labels


def event_span(runtime: Any, event_id: str) -> m.Span | None:
    """The stored event as a one-event span (None when it is not stored)."""
    user, _ = _thread_of(event_id)
    event = runtime.raw.get_event(user, event_id)
    if event is None or event.index is None:
        return None
    return m.Span(user, event.thread_id, event.index, event.index)


def memory_spans(runtime: Any, users: set[str]) -> dict[str, list[m.Span]]:
    """Every memory's source range per tenant (all statuses)."""
    out: dict[str, list[m.Span]] = {}
    for user in sorted(users):
        mems = runtime.memories.list_memories(user, limit=100_000)
        out[user] = [m.Span(user, x.source_range.thread_id, x.source_range.start_index,
                            x.source_range.end_index) for x in mems]
    return out


def score(q: GoldenQuestion, labels: Labels, ans: Answer) -> dict[str, Any]:
    """Every per-question metric of one method's answer."""
    needs_source = q.classification == EXACT
    row: dict[str, Any] = {
        "memory_hit1": m.hit_at_k(ans.memories, labels.memories, 1),
        "memory_hit5": m.hit_at_k(ans.memories, labels.memories, 5),
        "source_hit1": m.hit_at_k(ans.sources, labels.events, 1) if needs_source else None,
        "source_hit5": m.hit_at_k(ans.sources, labels.events, 5) if needs_source else None,
        "wrong_top1": m.wrong_top1(ans.memories, q.user_id, labels.events + labels.memories,
                                   labels.distractors),
        "exact": m.exact_value_hit(ans.text, q.value) if q.value else None,
        "stale_shown": m.stale_value_shown(ans.text, q.value, q.stale_values)
        if q.stale_values else None,
        "tokens": ans.tokens,
        "latency_ms": round(ans.latency_ms, 2),
    }
    if ans.method in BREADCRUMBS:
        fetched = bool(ans.sources)
        row["decide_ok"] = ans.classification == q.classification
        row["source_fetched"] = fetched
        row["classification"] = ans.classification
        row["decision_reason"] = ans.decision_reason
    row["top"] = [i.to_dict() for i in ans.memories[:3]]
    row["evidence"] = [i.to_dict() for i in ans.sources[:3]] if ans.method != RAW else []
    return row


def run_golden(runtime: Any, questions: list[GoldenQuestion],
               methods: dict[str, Callable[[GoldenQuestion], Answer]],
               tick: Callable[[], None]) -> list[dict[str, Any]]:
    """Ask every question of every method; one result row per question."""
    spans = memory_spans(runtime, {q.user_id for q in questions})
    rows = []
    for q in questions:
        labels = resolve(runtime, q, spans)
        row: dict[str, Any] = {"id": q.id, "user_id": q.user_id, "lang": q.lang,
                               "question": q.question, "category": q.category,
                               "expected_classification": q.classification, "value": q.value,
                               "expected_event_ids": list(q.expected_event_ids),
                               "unresolved": labels.unresolved, "methods": {}}
        for name, ask in methods.items():
            row["methods"][name] = score(q, labels, ask(q))
            tick()
        rows.append(row)
    return rows


def summarize(rows: list[dict[str, Any]], method: str) -> dict[str, Any]:
    """Aggregate one method's per-question metrics."""
    per = [r["methods"][method] for r in rows if method in r["methods"]]
    lat = [p["latency_ms"] for p in per]
    out: dict[str, Any] = {"questions": len(per)}
    for key in ("memory_hit1", "memory_hit5", "source_hit1", "source_hit5", "wrong_top1",
                "exact", "stale_shown"):
        out[key] = m.rate(p[key] for p in per)
    out["tokens_mean"] = m.mean(p["tokens"] for p in per)
    out["latency_p50_ms"] = m.percentile(lat, 50)
    out["latency_p95_ms"] = m.percentile(lat, 95)
    if method in BREADCRUMBS:
        out["decide_accuracy"] = m.rate(p["decide_ok"] for p in per)
        exact_rows = [r for r in rows if r["expected_classification"] == EXACT]
        summary_rows = [r for r in rows if r["expected_classification"] != EXACT]
        out["source_when_needed"] = m.rate(r["methods"][method]["source_fetched"]
                                           for r in exact_rows)
        out["source_when_not_needed"] = m.rate(r["methods"][method]["source_fetched"]
                                               for r in summary_rows)
    return out

"""LoCoMo: long conversations as agent events, and evidence recall under a token budget.

Data: LoCoMo's layout, one ``<id>.json`` per conversation (``speaker_a``, ``session_N``,
``session_N_date_time``, ``qa``; ``tests/support/locomo_synthetic.py`` writes one).
Mapping: one tenant and one thread per conversation; a ``topic_change`` "Session N on
<date_time>" before each session; one ``message`` per turn, content ``"<speaker>: <text>"``
(plus ``" [shares <caption>]"``), ``attrs.dia_id``; a final ``session_end``. A question's
evidence ``dia_id`` s name the turns that hold its answer.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from breadcrumb.eval import metrics as m
from breadcrumb.eval.methods import Answer


def default_dir() -> Path | None:
    """``BREADCRUMB_LOCOMO_DIR`` when set, else none: LoCoMo (CC BY-NC 4.0) is not shipped
    with Breadcrumb, ``breadcrumb eval`` skips it unless given a folder of conversations."""
    env = os.environ.get("BREADCRUMB_LOCOMO_DIR")
    return Path(env) if env else None


DEFAULT_DIR = default_dir()
ADVERSARIAL = 5
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
              5: "adversarial"}
_SESSION = re.compile(r"session_(\d+)")
_DIA = re.compile(r"D:?(\d+):(\d+)")


@dataclass(frozen=True, slots=True)
class LocomoQuestion:
    """A question with its evidence turns resolved to events."""

    conversation: str
    user_id: str
    question: str
    category: int
    evidence: tuple[m.Span, ...]
    evidence_texts: tuple[str, ...]


def conversation_ids(directory: Path) -> list[str]:
    """The conversation files present (``26``, ``30``, ...), sorted."""
    return sorted(p.stem for p in directory.glob("*.json"))


def problem(directory: Path) -> str | None:
    """Why ``directory`` cannot be read as LoCoMo data, or None."""
    if not directory.is_dir():
        return "no such folder"
    if not conversation_ids(directory):
        return "no conversation files (<id>.json) in it"
    return None


def _when(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def _turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def conversation_events(conv: str, data: dict[str, Any], max_sessions: int | None
                        ) -> list[dict[str, Any]]:
    """Contract events for one conversation (the first ``max_sessions`` sessions)."""
    user, thread = f"locomo-{conv}", f"conv-{conv}"
    sessions = sorted(int(s.group(1)) for k in data if (s := _SESSION.fullmatch(k)))
    events: list[dict[str, Any]] = []

    def add(ts: datetime, role: str, kind: str, content: str, **attrs: Any) -> None:
        idx = len(events)
        ev = {"event_id": f"{user}-{idx:05d}", "user_id": user, "thread_id": thread,
              "index": idx, "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ"), "role": role,
              "kind": kind, "content": content}
        if attrs:
            ev["attrs"] = attrs
        events.append(ev)

    ts = datetime(2000, 1, 1, tzinfo=UTC)
    for n in sessions[:max_sessions]:
        when = data.get(f"session_{n}_date_time", "")
        ts = max(ts, _when(when)) if when else ts
        add(ts, "system", "topic_change", f"Session {n} on {when}", session=n)
        for turn in data[f"session_{n}"]:
            ts += timedelta(seconds=30)
            add(ts, "user", "message", _turn_text(turn), dia_id=turn["dia_id"],
                speaker=turn["speaker"])
    add(ts + timedelta(minutes=1), "system", "session_end", "session end")
    return events


def load(directory: Path, conversations: int, max_sessions: int | None, questions: int
         ) -> tuple[list[dict[str, Any]], list[LocomoQuestion], dict[str, int]]:
    """Events and questions of the first ``conversations`` conversations.

    ``questions`` caps the questions per conversation (0 = all), taken round-robin over
    the categories (file order within each), so a cap keeps every category; a question
    whose evidence is not among the ingested turns is skipped and counted.
    """
    events: list[dict[str, Any]] = []
    qs: list[LocomoQuestion] = []
    skipped = {"no_evidence": 0, "evidence_not_ingested": 0}
    for conv in conversation_ids(directory)[:conversations]:
        data = json.loads((directory / f"{conv}.json").read_text("utf-8"))
        conv_events = conversation_events(conv, data, max_sessions)
        events += conv_events
        picked = interleave(_questions(conv, data, conv_events, skipped))
        qs += picked[:questions] if questions > 0 else picked
    return events, qs, skipped


def interleave(questions: list[LocomoQuestion]) -> list[LocomoQuestion]:
    """Round-robin over categories (1, 2, 3, 4, 5, 1, ...), file order within each."""
    groups: dict[int, list[LocomoQuestion]] = {}
    for q in questions:
        groups.setdefault(q.category, []).append(q)
    out: list[LocomoQuestion] = []
    queues = [groups[c] for c in sorted(groups)]
    for rank in range(max((len(g) for g in queues), default=0)):
        out += [g[rank] for g in queues if rank < len(g)]
    return out


def _questions(conv: str, data: dict[str, Any], events: list[dict[str, Any]],
               skipped: dict[str, int]) -> list[LocomoQuestion]:
    by_dia = {_norm(e["attrs"]["dia_id"]): e for e in events if "dia_id" in e.get("attrs", {})}
    out = []
    for qa in data["qa"]:
        dias = [f"D{s}:{t}" for ev in qa.get("evidence", []) for s, t in _DIA.findall(ev)]
        if not dias:
            skipped["no_evidence"] += 1
            continue
        found = [by_dia[d] for d in dias if d in by_dia]
        if len(found) != len(dias):
            skipped["evidence_not_ingested"] += 1
            continue
        spans = tuple(m.Span(e["user_id"], e["thread_id"], e["index"], e["index"])
                      for e in found)
        out.append(LocomoQuestion(conv, f"locomo-{conv}", str(qa["question"]),
                                  int(qa["category"]), spans,
                                  tuple(e["content"] for e in found)))
    return out


def _norm(dia: str) -> str:
    hit = _DIA.search(dia)
    return f"D{hit.group(1)}:{hit.group(2)}" if hit else dia


def score(q: LocomoQuestion, ans: Answer) -> dict[str, Any]:
    """Source Hit@k on returned ranges; evidence turns found verbatim in returned text."""
    return {
        "source_hit1": m.hit_at_k(ans.memories, q.evidence, 1),
        "source_hit5": m.hit_at_k(ans.memories, q.evidence, 5),
        "evidence_any": m.evidence_recall(ans.text, q.evidence_texts) > 0,
        "evidence_recall": m.evidence_recall(ans.text, q.evidence_texts),
        "tokens": ans.tokens,
        "latency_ms": round(ans.latency_ms, 2),
    }


def run(questions: list[LocomoQuestion], methods: dict[str, Callable[[LocomoQuestion], Answer]],
        tick: Callable[[], None]) -> list[dict[str, Any]]:
    """Ask every question of every method."""
    rows = []
    for q in questions:
        row: dict[str, Any] = {"conversation": q.conversation, "question": q.question,
                               "category": q.category, "methods": {}}
        for name, ask in methods.items():
            row["methods"][name] = score(q, ask(q))
            tick()
        rows.append(row)
    return rows


def summarize(rows: list[dict[str, Any]], method: str, adversarial: bool = False
              ) -> dict[str, Any]:
    """Aggregates over non-adversarial questions (or only adversarial ones)."""
    per = [r["methods"][method] for r in rows
           if (r["category"] == ADVERSARIAL) == adversarial and method in r["methods"]]
    out: dict[str, Any] = {"questions": len(per)}
    for key in ("source_hit1", "source_hit5", "evidence_any"):
        out[key] = m.rate(p[key] for p in per)
    out["evidence_recall"] = m.mean(p["evidence_recall"] for p in per)
    out["tokens_mean"] = m.mean(p["tokens"] for p in per)
    lat = [p["latency_ms"] for p in per]
    out["latency_p50_ms"] = m.percentile(lat, 50)
    out["latency_p95_ms"] = m.percentile(lat, 95)
    return out


def by_category(rows: list[dict[str, Any]], method: str) -> dict[str, dict[str, Any]]:
    """Source Hit@5 and evidence-in-budget per LoCoMo category."""
    out = {}
    for cat, name in CATEGORIES.items():
        per = [r["methods"][method] for r in rows if r["category"] == cat]
        if per:
            out[name] = {"questions": len(per),
                         "source_hit5": m.rate(p["source_hit5"] for p in per),
                         "evidence_any": m.rate(p["evidence_any"] for p in per)}
    return out

"""LongMemEval (Wu et al., ICLR 2025): long chat histories, retrieval scored without an LLM.

Mapping (the data's README): one tenant per question (``lme-<question_id>``; the histories
are independent), one thread per session (``thread_id`` = the session id), one ``message``
event per turn dated by the session's ``haystack_dates`` entry (+30 s a turn), and a
``session_end`` after each session. The question is asked on its ``question_date``:
``now`` of the recall request is that time (relative periods are anchored to it) and
``as_of`` the end of that day (nothing stored later counts). The day, not the minute: the
data dates some history turns later on the question's own day (11 of the 65 dev
questions, up to 23 h 45 min after the question's clock time, answer turns among them in
5; all 45 sessions of gpt4_2f56ae70), and the benchmark counts them as history. Plain dense
search obeys the same ``as_of``. The date is recorded with each row.

Metrics within the recall's token budget, from the event ids of the returned lines:

* **turn recall**: a ``has_answer`` turn is among the evidence lines;
* **session recall-all**: every answer session has a line in the evidence;
* **current value** (knowledge-update): a ``has_answer`` turn of the latest-dated answer
  session (the updated value) is among the evidence lines;
* tokens spent. Abstention questions (``_abs`` ids: the history does not hold the answer)
  are kept apart: what recall returned and how Decide classified it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from breadcrumb.eval import metrics as m
from breadcrumb.eval.methods import Answer
from breadcrumb.query_api.recall.as_of import said_by

TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
         "multi-session", "knowledge-update", "temporal-reasoning")
ABSTENTION = "abstention"
KNOWLEDGE_UPDATE = "knowledge-update"
TURN_SECONDS = 30
#: how a row's question was bounded in time (``as_of`` of the row)
AS_OF = "question-day"


@dataclass(frozen=True, slots=True)
class LmeQuestion:
    """One question with its own history mapped to events."""

    question_id: str
    question_type: str
    question: str
    question_date: str
    answer: str
    user_id: str
    events: tuple[dict[str, Any], ...]
    answer_sessions: tuple[str, ...]
    answer_turns: frozenset[str]
    current_turns: frozenset[str]
    session_of: dict[str, str]

    @property
    def answer_spans(self) -> list[m.Span]:
        """The ``has_answer`` turns as one-event spans (to test returned source ranges)."""
        return [m.Span(e["user_id"], e["thread_id"], e["index"], e["index"])
                for e in self.events if e["event_id"] in self.answer_turns]

    @property
    def abstention(self) -> bool:
        """The history does not hold the answer (``_abs`` ids)."""
        return self.question_id.endswith("_abs")

    @property
    def group(self) -> str:
        """The question type, or ``abstention``."""
        return ABSTENTION if self.abstention else self.question_type


def parse_date(text: str) -> datetime:
    """``2023/05/20 (Sat) 00:31`` as an aware UTC datetime."""
    day, _, rest = text.strip().partition(" (")
    clock = rest.partition(") ")[2] or "00:00"
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def asked_at(q: LmeQuestion) -> tuple[datetime, datetime]:
    """``(as_of, now)`` of a question: the end of its day, and its own time."""
    now = parse_date(q.question_date)
    day_end = now.replace(hour=23, minute=59, second=59)
    return day_end, now


def same_as_minute_bound(q: LmeQuestion) -> bool:
    """Whether the day bound sees what a bound at the question's minute saw (no session
    later on its day): a row asked with the minute bound (reports before the day bound,
    ``"as_of": true``) is then still valid."""
    now = parse_date(q.question_date)
    return all(said_by(e["ts"], now) for e in q.events)


def _thread_ids(session_ids: Sequence[str]) -> list[str]:
    """Session ids as thread ids; a repeated id (one file has one) gets ``#2``, ``#3``."""
    seen: dict[str, int] = {}
    out = []
    for sid in session_ids:
        seen[sid] = seen.get(sid, 0) + 1
        out.append(sid if seen[sid] == 1 else f"{sid}#{seen[sid]}")
    return out


def question_from(data: dict[str, Any]) -> LmeQuestion:
    """Events and labels of one LongMemEval record (the fields of ``longmemeval_s.json``)."""
    qid = str(data["question_id"])
    user = f"lme-{qid}"
    events: list[dict[str, Any]] = []
    turns_by_session: dict[str, list[str]] = {}
    session_of: dict[str, str] = {}
    dates = dict(zip(_thread_ids(data["haystack_session_ids"]), data["haystack_dates"],
                     strict=True))
    for thread, session in zip(dates, data["haystack_sessions"], strict=True):
        ts = parse_date(dates[thread])
        for idx, turn in enumerate(session):
            eid = f"{user}-{thread}-{idx:03d}"
            events.append(_event(eid, user, thread, idx, ts + timedelta(seconds=TURN_SECONDS * idx),
                                 turn["role"], "message", str(turn["content"])))
            session_of[eid] = thread
            if turn.get("has_answer"):
                turns_by_session.setdefault(thread, []).append(eid)
        end = len(session)
        events.append(_event(f"{user}-{thread}-{end:03d}", user, thread, end,
                             ts + timedelta(seconds=TURN_SECONDS * end), "system",
                             "session_end", "session end"))
    answer_sessions = tuple(str(s) for s in data["answer_session_ids"])
    return LmeQuestion(
        question_id=qid, question_type=str(data["question_type"]),
        question=str(data["question"]), question_date=str(data["question_date"]),
        answer=str(data["answer"]), user_id=user, events=tuple(events),
        answer_sessions=answer_sessions,
        answer_turns=frozenset(e for ids in turns_by_session.values() for e in ids),
        current_turns=frozenset(_latest_turns(answer_sessions, dates, turns_by_session)),
        session_of=session_of)


def _event(eid: str, user: str, thread: str, idx: int, ts: datetime, role: str, kind: str,
           content: str) -> dict[str, Any]:
    return {"event_id": eid, "user_id": user, "thread_id": thread, "index": idx,
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ"), "role": role, "kind": kind,
            "content": content}


def _latest_turns(answer_sessions: Sequence[str], dates: dict[str, str],
                  turns: dict[str, list[str]]) -> list[str]:
    """The ``has_answer`` turns of the latest-dated answer session that has any (the value
    as it stands after the update)."""
    labelled = [s for s in answer_sessions if turns.get(s) and s in dates]
    if not labelled:
        return []
    return turns[max(labelled, key=lambda s: parse_date(dates[s]))]


def load(directory: Path, per_type: int = 0, limit: int = 0) -> list[LmeQuestion]:
    """The directory's questions (``*.json``, one record each, or a list of records),
    interleaved over the groups (six types + abstention) so any prefix is stratified;
    ``per_type`` caps each group, ``limit`` the total (0 = no cap)."""
    if not directory.is_dir():
        raise ValueError(f"LongMemEval directory not found: {directory}")
    groups: dict[str, list[LmeQuestion]] = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text("utf-8"))
        for record in data if isinstance(data, list) else [data]:
            try:
                q = question_from(record)
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"{path.name}: not a LongMemEval record ({exc!r})") from exc
            groups.setdefault(q.group, []).append(q)
    if not groups:
        raise ValueError(f"no LongMemEval records (*.json) in {directory}")
    queues = [groups[g][:per_type] if per_type > 0 else groups[g]
              for g in (*TYPES, ABSTENTION, *sorted(set(groups) - {*TYPES, ABSTENTION}))
              if g in groups]
    out = [g[rank] for rank in range(max(len(g) for g in queues)) for g in queues
           if rank < len(g)]
    return out[:limit] if limit > 0 else out


def evidence_event_ids(ans: Answer) -> set[str]:
    """Event ids of every returned line (Breadcrumb evidence or raw chunks)."""
    return {eid for item in ans.sources for eid in item.event_ids}


def score(q: LmeQuestion, ans: Answer) -> dict[str, Any]:
    """Turn recall, session recall-all (and any), current value, tokens, for one answer."""
    ids = evidence_event_ids(ans)
    sessions = {q.session_of[e] for e in ids if e in q.session_of}
    labelled = bool(q.answer_turns) and not q.abstention
    row: dict[str, Any] = {
        "turn_recall": bool(ids & q.answer_turns) if labelled else None,
        "session_recall_all": set(q.answer_sessions) <= sessions if not q.abstention else None,
        "session_recall_any": bool(sessions & set(q.answer_sessions))
        if not q.abstention else None,
        "current_value": bool(ids & q.current_turns)
        if q.question_type == KNOWLEDGE_UPDATE and q.current_turns and not q.abstention
        else None,
        # a returned memory's source range holds an answer turn (retrieved, maybe not quoted)
        "memory_turn_hit": m.hit_at_k(ans.memories, q.answer_spans, len(ans.memories))
        if labelled else None,
        "tokens": ans.tokens, "lines_events": len(ids), "sessions": len(sessions),
        "latency_ms": round(ans.latency_ms, 2),
    }
    if ans.classification is not None:
        row["classification"] = ans.classification
        row["decision_reason"] = ans.decision_reason
    if q.abstention:
        row["top_text"] = ans.text[:200]
    return row


def ask_all(q: LmeQuestion, methods: dict[str, Callable[[LmeQuestion], Answer]]
            ) -> dict[str, dict[str, Any]]:
    """Every method's scored answer to one question."""
    return {name: score(q, ask(q)) for name, ask in methods.items()}


def _agg(per: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(per)}
    for key in ("turn_recall", "session_recall_all", "session_recall_any", "current_value",
                "memory_turn_hit"):
        out[key] = m.rate(p.get(key) for p in per)
    out["tokens_mean"] = m.mean(p["tokens"] for p in per)
    out["tokens_max"] = max((p["tokens"] for p in per), default=None)
    out["latency_p50_ms"] = m.percentile([p["latency_ms"] for p in per], 50)
    return out


def summarize(rows: Iterable[dict[str, Any]], method: str) -> dict[str, Any]:
    """All answerable questions, each group (type, abstention) apart."""
    rows = [r for r in rows if method in r["methods"]]
    out = {"all": _agg([r["methods"][method] for r in rows if r["group"] != ABSTENTION])}
    for group in (*TYPES, ABSTENTION):
        per = [r["methods"][method] for r in rows if r["group"] == group]
        if per:
            out[group] = _agg(per)
    if ABSTENTION in out:
        out[ABSTENTION]["classifications"] = _counts(
            r["methods"][method].get("classification") for r in rows
            if r["group"] == ABSTENTION)
    return out


def _counts(values: Iterable[str | None]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        if v is not None:
            out[v] = out.get(v, 0) + 1
    return out

"""From chosen memories to evidence: which ranges to follow (multi-hop), what the
answer replaced, dropping superseded values, and the RecalledEvidence record."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from breadcrumb.processors.extract import Extract, Passage
from breadcrumb.query_api.scoring import Candidate
from breadcrumb.topics.records import Event, Observation

_CONJUNCTION = re.compile(r"(?i)\b(and|both|as well as|plus)\b|と|および|、")
_FAILURE_LINE = re.compile(r"\b(Error|ERROR|Exception|FAILED|Traceback)\b|エラー|失敗")
HOP_RATIO = 0.75  # further ranges are followed when this close to the best
CONJUNCTION_HOP_RATIO = 0.45


def hops_of(top: list[Candidate], query: str) -> list[Candidate]:
    """The best memory, plus close ones (or looser ones when the question has parts)."""
    best = top[0].score
    ratio = CONJUNCTION_HOP_RATIO if _CONJUNCTION.search(query) else HOP_RATIO
    return [top[0]] + [c for c in top[1:3] if best > 0 and c.score >= best * ratio]


def passage(payload: dict[str, Any]) -> Passage:
    return Passage(str(payload["event_id"]), int(payload["event_index"]),
                   int(payload["char_start"]), str(payload["text"]))


def replaced(hops: list[Candidate], top: list[Candidate]) -> list[Candidate]:
    """Candidates whose facts the followed memories superseded (for history questions)."""
    linked = {str(v.get("memory_id")) for c in hops
              for v in (c.memory.metadata.get("supersedes_facts") or {}).values()
              if isinstance(v, dict)}
    linked |= {str(c.memory.supersedes_memory_id) for c in hops if c.memory.supersedes_memory_id}
    chosen = {c.memory.id for c in hops}
    return [c for c in top if c.memory.id in linked and c.memory.id not in chosen]


def drop_superseded(
    cut: Extract, memory: Observation, include: bool, count: Callable[[str], int]
) -> tuple[Extract, list[str]]:
    """Lines carrying a fact value that a newer memory replaced are history, not answers.

    Without ``include_superseded`` they are dropped (the memory's other, still-valid facts
    stay); with it they are kept and the values are named in ``superseded_values``. A
    failure line (``Error: connect ECONNREFUSED 127.0.0.1:5432``) is what happened, not a
    value claimed now: it stays.
    """
    facts = memory.metadata.get("superseded_facts") or {}
    stale = sorted({str(f.get("value")) for f in facts.values()
                    if isinstance(f, dict) and f.get("value")})
    if not stale:
        return cut, []
    if include:
        return cut, [v for v in stale if v in cut.text]
    kept = tuple(ln for ln in cut.lines
                 if _FAILURE_LINE.search(ln.text) or not any(v in ln.text for v in stale))
    return Extract(kept, sum(count(ln.text) for ln in kept), cut.best_score), []


def evidence_record(
    memory_id: str | None, thread_id: str, start: int, end: int, cut: Extract, reason: str
) -> dict[str, Any]:
    """A RecalledEvidence (contract)."""
    return {
        "memory_id": memory_id,
        "source_thread_id": thread_id,
        "source_start_index": start,
        "source_end_index": end,
        "matched_event_ids": cut.event_ids,
        "extracted_text": cut.text,
        # which event each line was cut from (the brief view groups lines by event)
        "lines": [{"event_id": ln.event_id, "event_index": ln.event_index, "text": ln.text}
                  for ln in cut.lines],
        "reason": f"{reason}, {cut.tokens} tokens" if "tokens" not in reason else reason,
    }


def events_by_id(raw: Any, user_id: str, event_ids: Sequence[str]) -> dict[str, Event]:
    """The user's events among ``event_ids``: one statement where the store has a batch
    lookup (``get_events``), then ``get_event`` for the ids it did not find (an archive
    answers those from its cold objects), so the result is that of one lookup per id."""
    ids = list(dict.fromkeys(event_ids))
    batch = getattr(raw, "get_events", None)
    found: dict[str, Event] = dict(batch(user_id, ids)) if batch is not None and ids else {}
    for eid in ids:
        if eid not in found and (event := raw.get_event(user_id, eid)) is not None:
            found[eid] = event
    return found

"""Respond, the pipeline's last stage: the RecallResponse from what the stages handed on.

Timestamps of the evidence's events (:func:`with_timestamps`), recall in time's last
filter, the lines a newer memory replaced marked (:mod:`.history`), the answer's token
cost, the use of the listed memories recorded (off the answer's path, :mod:`.usage`),
and the response itself (contract RecallResponse, without ``timings_ms``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from breadcrumb.query_api.recall.as_of import evidence_as_of
from breadcrumb.query_api.recall.history import mark_superseded
from breadcrumb.query_api.recall.rank import memory_view
from breadcrumb.query_api.recall.raw_reads import events_by_id
from breadcrumb.query_api.recall.stages import Decision, Extracted, Retrieved
from breadcrumb.query_api.recall.usage import UsageWriter
from breadcrumb.stores.ports import MemoryStore, RawEventStore


class Responder:
    """Stage 6: the RecallResponse (without timings)."""

    def __init__(self, memories: MemoryStore, raw: RawEventStore, count: Callable[[str], int],
                 usage: UsageWriter, clock: Callable[[], datetime]) -> None:
        self.memories, self.raw, self.count = memories, raw, count
        self.usage, self.clock = usage, clock

    def __call__(self, retrieved: Retrieved, decision: Decision, extracted: Extracted
                 ) -> dict[str, Any]:
        """Timestamps, token cost, usage, the RecallResponse (without timings)."""
        req, top = retrieved.request, retrieved.top
        evidence = extracted.evidence
        relevance = extracted.relevance
        if evidence:
            evidence = with_timestamps(self.raw, req.user_id, evidence)
        if retrieved.as_of is not None:  # only what had been said by then
            evidence = evidence_as_of(evidence, retrieved.as_of)
        if evidence:
            evidence = mark_superseded(self.memories, req.user_id, evidence,
                                       {c.memory.id: c.memory for c in retrieved.ranked})
        token_cost = sum(self.count(c.memory.summary) for c in top)
        token_cost += sum(self.count(e["extracted_text"]) for e in evidence)
        if top and not req.read_only:  # a look (read_only) is no use: no hit, no touch
            self.usage.record(req.user_id, [c.memory.id for c in top], self.clock().isoformat())
        memories = [memory_view(c) for c in top]
        response = {
            "query": req.query,
            "classification": decision.classification,
            "decision_reason": decision.reason,
            "level": extracted.level,
            "memories": memories,
            "evidence": evidence,
            "token_cost": token_cost,
        }
        if relevance is not None:  # additive: an absolute, calibrated relevance
            for view in memories:
                view["relevance"] = round(relevance.memories.get(view["id"], 0.0), 4)
            response["relevance"] = round(relevance.question, 4)
            response["nothing_matches"] = relevance.nothing_matches
        if extracted.calibrated is not None:  # additive: False under another embedder
            response["relevance_calibrated"] = extracted.calibrated
        return response


def with_timestamps(raw: RawEventStore, user_id: str, evidence: list[dict[str, Any]]
                    ) -> list[dict[str, Any]]:
    """Add ``ts`` (first matched event) and ``event_ts`` (every matched event) to each item,
    and its event's ``ts`` to each of its ``lines``."""
    events = events_by_id(raw, user_id, [i for it in evidence for i in it["matched_event_ids"]])
    for item in evidence:
        stamps = {eid: events[eid].ts for eid in item["matched_event_ids"] if eid in events}
        item["ts"] = next(iter(stamps.values()), None)
        item["event_ts"] = stamps
        for line in item.get("lines") or ():
            line["ts"] = stamps.get(line["event_id"])
    return evidence

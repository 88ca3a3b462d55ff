"""What each recall stage did, for people (``RecallRequest.explain``; the dashboard's
Recall inspector, docs/dashboard.md).

Built from the values the stages already handed each other (:mod:`.stages`): nothing is
searched or read again. ``candidates``: every ranked candidate (up to ``MAX_CANDIDATES``),
best first, with its score parts and whether it is in the answer (``top``) or followed
(``followed``); ``recall``: whether ranges were followed, each followed range with its
chunk hits (dense then lexical, per hop) and the open windows read; ``extract``: the
token budget, the tokens the evidence lines cost, the lines per range.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from breadcrumb.query_api.recall.stages import Extracted, Recalled

MAX_CANDIDATES = 50


def explain(recalled: Recalled, extracted: Extracted,
            count_tokens: Callable[[str], int]) -> dict[str, Any]:
    """The ``explain`` block of a RecallResponse."""
    retrieved = recalled.retrieved
    req = retrieved.request
    top = {c.memory.id for c in retrieved.top}
    hops = {c.memory.id for c in recalled.hops}
    candidates = [{
        "id": c.memory.id, "summary": c.memory.summary, "status": c.memory.status,
        "tier": c.memory.tier, "score": c.score, "score_parts": dict(c.parts),
        "top": c.memory.id in top, "followed": c.memory.id in hops,
    } for c in retrieved.ranked[:MAX_CANDIDATES]]
    return {
        "candidates": candidates,
        "candidates_total": len(retrieved.ranked),
        "k": req.k,
        "query_terms": dict(sorted(retrieved.query.terms.items(), key=lambda t: -t[1])[:20]),
        "recall": {"follow": recalled.follow, "ranges": _ranges(recalled),
                   "open_windows": _windows(recalled)},
        "extract": _extract(extracted, req.max_tokens, count_tokens),
    }


def _ranges(recalled: Recalled) -> list[dict[str, Any]]:
    out = []
    for i, cand in enumerate(recalled.hops):  # ranges: dense, lexical per hop (range_requests)
        rng = cand.memory.source_range
        dense, sparse = (recalled.ranges[2 * i: 2 * i + 2] + [[], []])[:2]
        out.append({"memory_id": cand.memory.id, "thread_id": rng.thread_id,
                    "start_index": rng.start_index, "end_index": rng.end_index,
                    "chunk_hits": len(dense) + len(sparse),
                    "chunks_cut": len(recalled.cut_passages.get(cand.memory.id, []))})
    return out


def _windows(recalled: Recalled) -> list[dict[str, Any]]:
    return [{"thread_id": w.thread_id, "start_index": w.start, "end_index": w.end,
             "events": len(events)} for w, events in (recalled.windows or [])]


def _extract(extracted: Extracted, budget: int,
             count_tokens: Callable[[str], int]) -> dict[str, Any]:
    per_range = []
    for ev in extracted.evidence:
        tokens = count_tokens(ev["extracted_text"]) if ev["extracted_text"] else 0
        per_range.append({"memory_id": ev["memory_id"], "thread_id": ev["source_thread_id"],
                          "lines": len(ev.get("lines") or []), "tokens": tokens})
    return {"max_tokens": budget, "tokens": sum(r["tokens"] for r in per_range),
            "level": extracted.level, "per_range": per_range}

"""Fresh tail: what a thread said a minute ago is recallable before its window closes.

Events wait in a thread's *open window* until it closes (40 events, ``session_end``,
idle timeout) and becomes a memory. Recall also reads the open windows of the asking
tenant (:meth:`query_api.recall.sources.Sources.open_window_events`: the store's
``list_open_states``, one tenant's key range — the embedded SQLite store, or in cluster
mode the SQL mirror of the worker's Faust table; a store without it has no fresh tail).
Here their lines are cut as raw passages: the same word-exact scoring as the cut
(query terms, value kinds, added diff lines, decisions); a line must score at least
:data:`MIN_SCORE`; a diff's removed lines are left out unless the first / previous
value is asked for. A match is evidence whose ``source_*`` range is the open window,
with ``memory_id: null``, ``observed: false`` and ``status: "open_window"`` (additive
fields). Once the window closes, the memory takes over; a line already given by a
memory's evidence is never repeated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from breadcrumb.query_api.recall.extract.cut import extract_lines
from breadcrumb.query_api.recall.passages import Extract, evidence_record
from breadcrumb.query_api.recall.question import Query
from breadcrumb.query_api.recall.stages import OpenWindow
from breadcrumb.topics.records import Event

#: A line of an open window must score at least this (about one word plus a boost,
#: or two words) to be offered: weaker matches are noise next to real memories.
MIN_SCORE = 1.5
OPEN_WINDOW = "open_window"

Windows = Sequence[tuple[OpenWindow, list[Event]]]


def search(windows: Windows, query: Query, budget: int, count: Callable[[str], int]
           ) -> list[dict[str, Any]]:
    """Evidence from open windows, best first, within ``budget`` tokens."""
    found = []
    for window, events in windows:
        cut = extract_lines(query.text, events, budget, count, intent=query.intent)
        if query.intent.temporal != "oldest":
            cut = _without_removed_lines(cut, events, count)
        if cut.lines and cut.best_score >= MIN_SCORE:
            found.append((cut.best_score, window, cut))
    found.sort(key=lambda f: (-f[0], f[1].thread_id))
    out, left = [], budget
    for score, window, cut in found:
        if cut.tokens > left:
            continue
        left -= cut.tokens
        item = evidence_record(
            None, window.thread_id, window.start, window.end, cut,
            f"open window (not yet observed); {len(cut.lines)} line(s), best line "
            f"{score:.2f}")
        item.update(observed=False, status=OPEN_WINDOW)
        out.append(item)
    return out


def _without_removed_lines(cut: Extract, events: Sequence[Event],
                           count: Callable[[str], int]) -> Extract:
    """A diff's removed lines are what the window replaced, not a current value."""
    edits = {e.event_id for e in events if e.kind == "file_edit"}
    kept = tuple(ln for ln in cut.lines if not (
        ln.event_id in edits and ln.text.startswith("-") and not ln.text.startswith("---")))
    if len(kept) == len(cut.lines):
        return cut
    return Extract.joined(kept, count, max((ln.score for ln in kept), default=0.0))


def merge(query: Query, evidence: list[dict[str, Any]], windows: Windows,
          count: Callable[[str], int], total: int) -> list[dict[str, Any]]:
    """Memory evidence plus fresh-tail evidence, within ``total`` tokens (the evidence
    budget: what the listed summaries leave of the request's ``max_tokens``).

    Lines a memory already gave are not repeated (a window that closed meanwhile).
    The fresh tail leads when nothing else answered or the newest value is asked
    for; otherwise it follows the memories' evidence.
    """
    budget = total if not evidence else max(total // 2, 1)
    given = {i for e in evidence for i in e["matched_event_ids"]}
    fresh = [f for f in search(windows, query, budget, count)
             if not given.intersection(f["matched_event_ids"])]
    if not fresh:
        return evidence
    lead = not evidence or query.intent.temporal == "newest"
    merged = fresh + evidence if lead else evidence + fresh
    return _within(merged, total, count)


def _within(items: Sequence[dict[str, Any]], budget: int,
            count: Callable[[str], int]) -> list[dict[str, Any]]:
    """Whole evidence items in order while they fit (the first one always stays)."""
    out: list[dict[str, Any]] = []
    used = 0
    for item in items:
        cost = count(item["extracted_text"])
        if out and used + cost > budget:
            continue
        out.append(item)
        used += cost
    return out

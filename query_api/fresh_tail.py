"""Fresh tail: what a thread said a minute ago is recallable before its window closes.

Events wait in a thread's *open window* until it closes (40 events, ``session_end``,
idle timeout) and becomes a memory. Recall also searches the open windows of the
asking tenant as raw passages: the same verbatim line scoring as Extract (query terms,
value kinds, added diff lines, decisions), a line must score at least
:data:`MIN_SCORE`; a diff's removed lines are left out unless the first / previous value
is asked for. A match is evidence whose ``source_*`` range is the open window,
with ``memory_id: null``, ``observed: false`` and ``status: "open_window"`` (additive
fields). Once the window closes, it is no longer open: the memory takes over; a line
already given by a memory's evidence is never repeated.

Open windows are read from the thread-state store (``list_open_states``: one tenant's
key range): the embedded SQLite store, or in cluster mode the SQL mirror of the worker's
Faust table. A store without it has no fresh tail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from breadcrumb.processors.extract import Extract, extract_lines
from breadcrumb.query_api.evidence import evidence_record
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.query_api.scoring import Query
from breadcrumb.stores.ports import RawEventStore
from breadcrumb.topics.records import Event

#: A line of an open window must score at least this (about one word plus a boost,
#: or two words) to be offered: weaker matches are noise next to real memories.
MIN_SCORE = 1.5
#: At most this many open windows (the most recently active first) are read per recall.
MAX_WINDOWS = 32
OPEN_WINDOW = "open_window"


class StateLister(Protocol):
    def list_open_states(self, user_id: str) -> list[tuple[str, dict[str, Any]]]: ...


@dataclass(frozen=True, slots=True)
class OpenWindow:
    """The not yet observed events of one thread: indices ``start..end``."""

    user_id: str
    thread_id: str
    project_id: str | None
    start: int
    end: int
    last_ts: str


def open_windows(states: Iterable[tuple[str, dict[str, Any]]], user_id: str,
                 project_id: str | None = None, thread_id: str | None = None
                 ) -> list[OpenWindow]:
    """The tenant's open windows (newest activity first), filtered like recall."""
    out = []
    for _key, state in states:
        pending = state.get("pending") or []
        if state.get("user_id") != user_id or not pending:
            continue
        if project_id is not None and state.get("project_id") != project_id:
            continue
        if thread_id is not None and state.get("thread_id") != thread_id:
            continue
        indices = [int(p[0]) for p in pending]
        out.append(OpenWindow(user_id, str(state["thread_id"]), state.get("project_id"),
                              min(indices), max(indices), str(pending[-1][4])))
    out.sort(key=lambda w: (w.last_ts, w.thread_id), reverse=True)
    return out[:MAX_WINDOWS]


class FreshTail:
    """Searches the open windows of a tenant's threads at recall time."""

    def __init__(self, states: StateLister, raw: RawEventStore,
                 count_tokens: Callable[[str], int]) -> None:
        self.states = states
        self.raw = raw
        self.count = count_tokens

    @classmethod
    def for_store(cls, store: Any, raw: RawEventStore,
                  count_tokens: Callable[[str], int]) -> FreshTail | None:
        """A fresh tail over ``store`` when it keeps thread state, else None."""
        if not callable(getattr(store, "list_open_states", None)):
            return None
        return cls(store, raw, count_tokens)

    def search(self, req: RecallRequest, query: Query, budget: int) -> list[dict[str, Any]]:
        """Evidence from open windows, best first, within ``budget`` tokens.

        A tag filter excludes the fresh tail: an open window has no tags yet."""
        if req.tags:
            return []
        windows = open_windows(self.states.list_open_states(req.user_id), req.user_id,
                               req.project_id, req.thread_id)
        found = []
        for window in windows:
            events = self.raw.get_range(req.user_id, window.thread_id, window.start, window.end)
            cut = extract_lines(query.text, events, budget, self.count, intent=query.intent)
            if query.intent.temporal != "oldest":
                cut = self._without_removed_lines(cut, events)
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

    def _without_removed_lines(self, cut: Extract, events: Sequence[Event]) -> Extract:
        """A diff's removed lines are what the window replaced, not a current value."""
        edits = {e.event_id for e in events if e.kind == "file_edit"}
        kept = tuple(ln for ln in cut.lines if not (
            ln.event_id in edits and ln.text.startswith("-") and not ln.text.startswith("---")))
        if len(kept) == len(cut.lines):
            return cut
        return Extract(kept, sum(self.count(ln.text) for ln in kept),
                       max((ln.score for ln in kept), default=0.0))

    def merge(self, req: RecallRequest, query: Query,
              evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Memory evidence plus fresh-tail evidence, within ``req.max_tokens``.

        Lines a memory already gave are not repeated (a window that closed meanwhile).
        The fresh tail leads when nothing else answered or the newest value is asked
        for; otherwise it follows the memories' evidence.
        """
        budget = req.max_tokens if not evidence else max(req.max_tokens // 2, 1)
        given = {i for e in evidence for i in e["matched_event_ids"]}
        fresh = [f for f in self.search(req, query, budget)
                 if not given.intersection(f["matched_event_ids"])]
        if not fresh:
            return evidence
        lead = not evidence or query.intent.temporal == "newest"
        merged = fresh + evidence if lead else evidence + fresh
        return _within(merged, req.max_tokens, self.count)


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

"""Recall in time: the memories as they stood at ``as_of``, from what a replay rebuilds.

A memory exists from its ``created_at`` (the time of the last event of its range: the
events' own time, the same after a replay). A supersession happens when the superseding
memory is said, so a memory superseded by one created after ``as_of`` was still current
then; the facts its metadata names superseded (``superseded_facts``) are, as of then,
only those a memory created at or before ``as_of`` replaced. The audit rows' ``at`` is
the wall clock of storage (a replay rewrites it), so it never decides here.

Evidence follows the events: only events with a time at or before ``as_of`` are quoted
(:func:`evidence_as_of`). A time not before the request time filters nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from breadcrumb.query_api.recall.passages import Found
from breadcrumb.stores.ports import MemoryRowReads, MemoryStore
from breadcrumb.topics.records import Event, Observation


def parse_ts(value: str) -> datetime:
    """A stored time (``2026-11-02T10:00:00Z``) as a datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def effective_as_of(as_of: datetime | None, request_time: datetime) -> datetime | None:
    """``as_of`` when it lies before the request time; else None (nothing to filter)."""
    if as_of is None:
        return None
    at = as_of if as_of.tzinfo is not None else as_of.replace(tzinfo=UTC)
    return at if at < request_time else None


def said_by(ts: str, at: datetime) -> bool:
    """Whether a stored time (event ``ts``, memory ``created_at``) is at or before ``at``;
    an unreadable time is not (never show what cannot be placed)."""
    try:
        when = parse_ts(ts)
    except (TypeError, ValueError):
        return False
    when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return when <= at


@dataclass(frozen=True, slots=True)
class _Links:
    """Who superseded whom, and when each superseder was said (None: it is gone)."""

    superseded_by: dict[str, str]  # memory id -> its row's ``superseded_by``
    said_at: dict[str, str | None]  # superseder id -> its ``created_at``


class MemoriesAsOf:
    """The memories of a user as they stood at ``at``."""

    def __init__(self, store: MemoryStore, user_id: str, at: datetime) -> None:
        self.store, self.user_id, self.at = store, user_id, at

    def __call__(self, memories: Sequence[Observation]) -> list[Observation]:
        """``memories`` said by ``at``, each with the status and superseded facts it had
        then (order kept)."""
        kept = [m for m in memories if said_by(m.created_at, self.at)]
        links = self._links(kept)
        return [self._then(m, links) for m in kept]

    def _links(self, memories: Sequence[Observation]) -> _Links:
        """The superseders of ``memories`` (row links and the facts' ``superseded_by``)."""
        rows = (self.store.get_memory_rows(self.user_id, [m.id for m in memories])
                if isinstance(self.store, MemoryRowReads) and memories else {})
        by = {mid: str(row["superseded_by"]) for mid, row in rows.items()
              if row.get("superseded_by")}
        ids = set(by.values()).union(*(_fact_superseders(m) for m in memories))
        found = {o.id: o.created_at for o in self.store.get_memories(self.user_id, sorted(ids))}
        return _Links(by, {i: found.get(i) for i in ids})

    def _then(self, memory: Observation, links: _Links) -> Observation:
        facts = memory.metadata.get("superseded_facts") or {}
        kept_facts = {k: v for k, v in facts.items()
                      if not isinstance(v, dict) or self._before(links, v.get("superseded_by"))}
        status = memory.status
        if status == "superseded" and not self._superseded_then(memory, links):
            status = "active"  # what a superseded memory was until then
        if status == memory.status and len(kept_facts) == len(facts):
            return memory
        metadata = dict(memory.metadata)
        if kept_facts:
            metadata["superseded_facts"] = kept_facts
        else:
            metadata.pop("superseded_facts", None)
        return replace(memory, status=status, metadata=metadata)

    def _superseded_then(self, memory: Observation, links: _Links) -> bool:
        by = links.superseded_by.get(memory.id)
        if by is not None:
            return self._before(links, by)
        named = _fact_superseders(memory)  # no row link: the facts' superseders decide
        return not named or any(self._before(links, i) for i in named)

    def _before(self, links: _Links, superseder: Any) -> bool:
        """A supersession by ``superseder`` had happened by ``at`` (one not named, or gone:
        it had, the memory keeps what it has now)."""
        said = links.said_at.get(str(superseder)) if superseder else None
        return said is None or said_by(said, self.at)


def _fact_superseders(memory: Observation) -> set[str]:
    facts = memory.metadata.get("superseded_facts") or {}
    return {str(v["superseded_by"]) for v in facts.values()
            if isinstance(v, dict) and v.get("superseded_by")}


def found_as_of(found: dict[str, Found], visible: Iterable[str]) -> dict[str, Found]:
    """The passages of the memories visible at ``as_of`` only."""
    keep = set(visible)
    return {k: f for k, f in found.items() if f.memory_id in keep}


def events_as_of(events: Sequence[Event], at: datetime | None) -> list[Event]:
    """The events said at or before ``at`` (all of them without ``at``)."""
    return list(events) if at is None else [e for e in events if said_by(e.ts, at)]


def evidence_as_of(evidence: list[dict[str, Any]], at: datetime) -> list[dict[str, Any]]:
    """Evidence items (already dated: ``event_ts``) quoting only events said by ``at``."""
    return [item for item in evidence
            if all(said_by(ts, at) for ts in (item.get("event_ts") or {}).values())
            and len(item.get("event_ts") or {}) == len(item.get("matched_event_ids") or [])]

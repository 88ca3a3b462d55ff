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
from breadcrumb.query_api.recall.rank import parse_ts
from breadcrumb.stores.ports import MemoryRowReads, MemoryStore
from breadcrumb.topics.records import Event, Observation

#: statuses a memory may have had before its current one was set by a supersession
_WAS_CURRENT = "active"


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
class Superseder:
    """Who superseded a memory and when that memory was said."""

    memory_id: str
    created_at: str | None  # None: the superseder is gone (forgotten)


class MemoriesAsOf:
    """The memories of a user as they stood at ``at``."""

    def __init__(self, store: MemoryStore, user_id: str, at: datetime) -> None:
        self.store, self.user_id, self.at = store, user_id, at

    def __call__(self, memories: Sequence[Observation]) -> list[Observation]:
        """``memories`` said by ``at``, each with the status and superseded facts it had
        then (order kept)."""
        kept = [m for m in memories if said_by(m.created_at, self.at)]
        links = self._superseders(kept)
        return [self._then(m, links) for m in kept]

    def _superseders(self, memories: Sequence[Observation]) -> dict[str, Superseder]:
        """Every memory id named as a superseder of ``memories`` -> its creation time."""
        ids: set[str] = set()
        rows = (self.store.get_memory_rows(self.user_id, [m.id for m in memories])
                if isinstance(self.store, MemoryRowReads) and memories else {})
        for m in memories:
            ids.update(_fact_superseders(m))
            by = (rows.get(m.id) or {}).get("superseded_by")
            if by:
                ids.add(str(by))
        found = {o.id: o.created_at for o in self.store.get_memories(self.user_id, sorted(ids))}
        out = {i: Superseder(i, found.get(i)) for i in ids}
        for m in memories:  # the memory-level link, under the superseded memory's id
            by = (rows.get(m.id) or {}).get("superseded_by")
            if by:
                out[f"of:{m.id}"] = out[str(by)]
        return out

    def _then(self, memory: Observation, links: dict[str, Superseder]) -> Observation:
        facts = memory.metadata.get("superseded_facts") or {}
        kept_facts = {k: v for k, v in facts.items()
                      if not isinstance(v, dict) or self._before(links.get(
                          str(v.get("superseded_by") or "")))}
        status = memory.status
        if status == "superseded" and not self._superseded_then(memory, links):
            status = _WAS_CURRENT
        if status == memory.status and len(kept_facts) == len(facts):
            return memory
        metadata = dict(memory.metadata)
        if kept_facts:
            metadata["superseded_facts"] = kept_facts
        else:
            metadata.pop("superseded_facts", None)
        return replace(memory, status=status, metadata=metadata)

    def _superseded_then(self, memory: Observation, links: dict[str, Superseder]) -> bool:
        link = links.get(f"of:{memory.id}")
        if link is None:  # no row link: the facts' superseders decide
            named = [links.get(i) for i in _fact_superseders(memory)]
            return not named or any(self._before(s) for s in named)
        return self._before(link)

    def _before(self, link: Superseder | None) -> bool:
        """A supersession by ``link`` had happened by ``at`` (a gone superseder: it had,
        the memory keeps the status it has)."""
        if link is None or link.created_at is None:
            return True
        return said_by(link.created_at, self.at)


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

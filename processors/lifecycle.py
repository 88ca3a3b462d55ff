"""Tier promotion / demotion / deletion and archiving: pure rules, time passed in.

Tiers (``provisional`` → ``confirmed`` → ``active``) are separate from status. A memory is
promoted when it collects ``confirm_hits`` recall hits within ``confirm_window`` (then
``active_hits`` within ``active_window``) or when a later range verifies it (a passing test
or a user confirmation, see ``processors.supersession``). The store only keeps a hit
counter and the last use, so the sweeper keeps a *hit window* per memory: ``hits_base``
(the counter when the window opened) and ``window_start``; a window that expires without
enough hits re-opens at the current counter. Hits are thus counted within the window to
the sweeper's granularity.

Demotion is by TTL since the memory was last touched (``max(last_used, tier_since)``):
active → confirmed after ``ttl_active``, confirmed → provisional after ``ttl_confirmed``,
provisional → deleted (a tombstone) after ``ttl_provisional``. Superseded memories become
``archived`` after ``archive_superseded_after``; with ``archive_unused_after`` set (default
off), a memory unused (since last use or creation) that long is archived before the TTL
chain can delete it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

TIERS: tuple[str, ...] = ("provisional", "confirmed", "active")
STATUSES: tuple[str, ...] = ("active", "superseded", "archived", "conflicted")
DELETE = "deleted"


@dataclass(frozen=True, slots=True)
class LifecycleConfig:
    """Thresholds and TTLs (settings ``lifecycle_*``; per-project overrides allowed)."""

    confirm_hits: int = 3
    confirm_window: timedelta = timedelta(hours=24)
    active_hits: int = 10
    active_window: timedelta = timedelta(hours=72)
    ttl_active: timedelta = timedelta(days=365)
    ttl_confirmed: timedelta = timedelta(days=30)
    ttl_provisional: timedelta = timedelta(days=7)
    archive_superseded_after: timedelta = timedelta(days=30)
    #: 0 disables archiving of unused memories (they follow the TTL chain to deletion).
    archive_unused_after: timedelta = timedelta(0)

    def with_overrides(self, values: dict[str, Any]) -> LifecycleConfig:
        """A copy with ``{"confirm_hits": 5, "ttl_provisional_days": 3, ...}`` applied.

        Durations are given as ``<name>_hours`` or ``<name>_days``.
        """
        changes: dict[str, Any] = {}
        for name, value in values.items():
            if name.endswith("_hours"):
                changes[name[:-6]] = timedelta(hours=float(value))
            elif name.endswith("_days"):
                changes[name[:-5]] = timedelta(days=float(value))
            else:
                changes[name] = int(value)
        unknown = set(changes) - set(self.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown lifecycle setting(s): {sorted(unknown)}")
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class MemoryLife:
    """What the sweeper knows of one memory (an ``agent_memories`` row + its lifecycle row)."""

    memory_id: str
    user_id: str
    project_id: str | None
    status: str
    tier: str
    hit_count: int
    last_used_at: str | None
    created_at: str
    tier_since: str  # when the tier (or, for superseded, the status) last changed
    hits_base: int = 0
    window_start: str | None = None


@dataclass(frozen=True, slots=True)
class Transition:
    """One decided change. ``tier == DELETE`` means delete (tombstone)."""

    memory_id: str
    user_id: str
    status: str
    tier: str
    reason: str  # the rule, e.g. "promote:3 hits within 24h" (audit "why")


@dataclass(frozen=True, slots=True)
class HitWindow:
    """The sweeper's hit-window bookkeeping for one memory."""

    hits_base: int
    window_start: str


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def decide(life: MemoryLife, now: datetime, cfg: LifecycleConfig) -> Transition | None:
    """The one change due now (archive, delete, demote or promote), or None."""
    if life.status == "archived":
        return None
    return _archive(life, now, cfg) or _demote(life, now, cfg) or _promote(life, now, cfg)


def _touched(life: MemoryLife) -> datetime:
    marks = [life.tier_since, life.created_at] + ([life.last_used_at] if life.last_used_at else [])
    return max(_ts(m) for m in marks)


def _archive(life: MemoryLife, now: datetime, cfg: LifecycleConfig) -> Transition | None:
    if life.status == "superseded" and now - _ts(life.tier_since) >= cfg.archive_superseded_after:
        reason = f"archive:superseded {_span(cfg.archive_superseded_after)}"
        return _t(life, "archived", life.tier, reason)
    unused = cfg.archive_unused_after
    if unused and now - _ts(life.last_used_at or life.tier_since) >= unused:
        return _t(life, "archived", life.tier, f"archive:unused {_span(unused)}")
    return None


def _ttl(tier: str, cfg: LifecycleConfig) -> timedelta:
    return {"active": cfg.ttl_active, "confirmed": cfg.ttl_confirmed}.get(tier, cfg.ttl_provisional)


def _demote(life: MemoryLife, now: datetime, cfg: LifecycleConfig) -> Transition | None:
    ttl = _ttl(life.tier, cfg)
    if now - _touched(life) < ttl:
        return None
    index = TIERS.index(life.tier) if life.tier in TIERS else 0
    target = DELETE if index == 0 else TIERS[index - 1]
    verb = "delete" if target == DELETE else "demote"
    return _t(life, life.status, target, f"{verb}:unused {_span(ttl)}")


def _promote(life: MemoryLife, now: datetime, cfg: LifecycleConfig) -> Transition | None:
    if life.status not in ("active", "conflicted") or life.tier == "active":
        return None
    hits, window = (cfg.confirm_hits, cfg.confirm_window) if life.tier == "provisional" \
        else (cfg.active_hits, cfg.active_window)
    start = _ts(life.window_start or life.tier_since)
    if life.hit_count - life.hits_base < hits or now - start > window:
        return None
    target = TIERS[TIERS.index(life.tier) + 1]
    return _t(life, life.status, target, f"promote:{hits} hits within {_span(window)}")


def roll_window(life: MemoryLife, now: datetime, cfg: LifecycleConfig) -> HitWindow | None:
    """A new hit window when the current one expired (None: keep it)."""
    window = cfg.confirm_window if life.tier == "provisional" else cfg.active_window
    start = _ts(life.window_start or life.tier_since)
    if now - start <= window:
        return None
    return HitWindow(life.hit_count, now.isoformat())


def verify(life: MemoryLife, reason: str) -> Transition | None:
    """Promotion by verification: one tier up (None when already ``active``)."""
    if life.tier == "active" or life.status not in ("active", "conflicted"):
        return None
    target = TIERS[TIERS.index(life.tier) + 1] if life.tier in TIERS else "confirmed"
    return _t(life, life.status, target, f"verify:{reason}")


def _t(life: MemoryLife, status: str, tier: str, reason: str) -> Transition:
    return Transition(life.memory_id, life.user_id, status, tier, reason)


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds % 86400 == 0:
        return f"{seconds // 86400}d"
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    return f"{seconds}s"

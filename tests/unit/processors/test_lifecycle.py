"""Pure tier rules with explicit times."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from breadcrumb.processors.lifecycle import (
    DELETE,
    LifecycleConfig,
    MemoryLife,
    decide,
    roll_window,
    verify,
)

T0 = datetime(2024, 5, 1, tzinfo=UTC)
CFG = LifecycleConfig()


def life(**kw: object) -> MemoryLife:
    base = MemoryLife("m", "u", "p", "active", "provisional", 0, None, T0.isoformat(),
                      T0.isoformat(), 0, T0.isoformat())
    return replace(base, **kw)  # type: ignore[arg-type]


def test_promotions_by_hits_within_window() -> None:
    assert decide(life(hit_count=2), T0 + timedelta(hours=1), CFG) is None
    step = decide(life(hit_count=3), T0 + timedelta(hours=1), CFG)
    assert step and step.tier == "confirmed" and step.reason == "promote:3 hits within 1d"
    assert decide(life(hit_count=3), T0 + timedelta(hours=25), CFG) is None  # window passed
    step = decide(life(tier="confirmed", hit_count=10), T0 + timedelta(hours=70), CFG)
    assert step and step.tier == "active"


def test_window_rolls_at_the_counter() -> None:
    w = roll_window(life(hit_count=2), T0 + timedelta(hours=30), CFG)
    assert w and w.hits_base == 2
    assert roll_window(life(hit_count=2), T0 + timedelta(hours=3), CFG) is None


def test_demotions_and_deletion_by_ttl() -> None:
    step = decide(life(tier="active"), T0 + timedelta(days=365), CFG)
    assert step and (step.tier, step.reason) == ("confirmed", "demote:unused 365d")
    step = decide(life(tier="confirmed"), T0 + timedelta(days=30), CFG)
    assert step and step.tier == "provisional"
    step = decide(life(), T0 + timedelta(days=7), CFG)
    assert step and step.tier == DELETE
    used = life(last_used_at=(T0 + timedelta(days=5)).isoformat())
    assert decide(used, T0 + timedelta(days=8), CFG) is None


def test_archive_rules() -> None:
    sup = life(status="superseded", tier="confirmed")
    step = decide(sup, T0 + timedelta(days=30), CFG)
    assert step and step.status == "archived"
    cfg = CFG.with_overrides({"archive_unused_after_days": 3})
    step = decide(life(), T0 + timedelta(days=3), cfg)
    assert step and step.status == "archived"
    assert decide(life(status="archived"), T0 + timedelta(days=999), CFG) is None


def test_verify_one_tier_up_and_overrides() -> None:
    step = verify(life(), "test_result")
    assert step and step.tier == "confirmed"
    assert verify(life(tier="active"), "x") is None
    cfg = CFG.with_overrides({"confirm_hits": 5, "ttl_provisional_days": 2})
    assert cfg.confirm_hits == 5 and cfg.ttl_provisional == timedelta(days=2)
    with pytest.raises(ValueError):
        CFG.with_overrides({"nope": 1})

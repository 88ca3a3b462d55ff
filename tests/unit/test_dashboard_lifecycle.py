"""The dashboard's TTL countdown: the sweeper's next change of an untouched memory."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from breadcrumb.processors import lifecycle as lc
from breadcrumb.query_api.routes.dashboard_data import next_change

CFG = lc.LifecycleConfig()


def _life(**values: object) -> lc.MemoryLife:
    base = {"memory_id": "m", "user_id": "u", "project_id": None, "status": "active",
            "tier": "provisional", "hit_count": 0, "last_used_at": None,
            "created_at": "2026-11-01T00:00:00Z", "tier_since": "2026-11-01T00:00:00Z"}
    return lc.MemoryLife(**{**base, **values})  # type: ignore[arg-type]


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_provisional_memory_is_deleted_a_ttl_after_its_last_touch() -> None:
    due = next_change(_life(last_used_at="2026-11-05T00:00:00Z"), CFG)
    assert due is not None and due["action"] == "delete" and due["to"] == "deleted"
    assert _at(due["at"]) == datetime(2026, 11, 5, tzinfo=UTC) + CFG.ttl_provisional
    # and the sweeper agrees: nothing a second before, the deletion at that time
    life = _life(last_used_at="2026-11-05T00:00:00Z")
    assert lc.decide(life, _at(due["at"]) - timedelta(seconds=1), CFG) is None
    step = lc.decide(life, _at(due["at"]), CFG)
    assert step is not None and step.tier == lc.DELETE


def test_higher_tiers_demote_and_superseded_ones_archive_first() -> None:
    confirmed = next_change(_life(tier="confirmed"), CFG)
    assert confirmed is not None and (confirmed["action"], confirmed["to"]) == (
        "demote", "provisional")
    active = next_change(_life(tier="active"), CFG)
    assert active is not None and active["to"] == "confirmed"
    superseded = next_change(_life(status="superseded", tier="active"), CFG)
    assert superseded is not None and superseded["action"] == "archive"
    assert _at(superseded["at"]) == _at("2026-11-01T00:00:00Z") + CFG.archive_superseded_after
    assert next_change(_life(status="archived"), CFG) is None

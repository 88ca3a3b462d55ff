"""The wall clock (an outside-world port like the stores): every layer may read it."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """The wall clock (timezone-aware)."""
    return datetime.now(UTC)


def utc_now_iso() -> str:
    return utc_now().isoformat()

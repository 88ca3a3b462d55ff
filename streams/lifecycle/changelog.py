"""The lifecycle's changelog ports (where applied status changes go) and its per-project
configuration from settings; used by :class:`~streams.lifecycle.service.LifecycleService`."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from breadcrumb.processors import lifecycle as lc
from breadcrumb.stores.sql.lifecycle import LifecycleTables

ConfigFor = Callable[[str | None], lc.LifecycleConfig]


class ChangelogPublisher(Protocol):
    """Where changes go after they are applied (key = memory id, None = tombstone)."""

    def publish(self, memory_id: str, user_id: str, value: dict[str, Any] | None) -> None: ...


class SqlChangelog:
    """The embedded "topic": the ``memory_changelog`` table."""

    def __init__(self, tables: LifecycleTables, clock: Callable[[], datetime]) -> None:
        self.tables = tables
        self.clock = clock

    def publish(self, memory_id: str, user_id: str, value: dict[str, Any] | None) -> None:
        self.tables.changelog.append_change(memory_id, user_id, value,
                                            self.clock().isoformat())


class CollectingChangelog:
    """Collects changes for a caller that sends them itself (the Faust agent and timer)."""

    def __init__(self) -> None:
        self._items: list[tuple[str, dict[str, Any] | None]] = []
        self._lock = threading.Lock()

    def publish(self, memory_id: str, user_id: str, value: dict[str, Any] | None) -> None:
        with self._lock:
            self._items.append((memory_id, value))

    def drain(self) -> list[tuple[str, dict[str, Any] | None]]:
        """Everything collected since the last drain, in order."""
        with self._lock:
            items, self._items = self._items, []
        return items


def lifecycle_configs(settings: Any) -> ConfigFor:
    """Settings ``lifecycle_*`` → a config per project (``lifecycle_project_overrides``)."""
    base = lc.LifecycleConfig().with_overrides({
        "confirm_hits": settings.lifecycle_confirm_hits,
        "confirm_window_hours": settings.lifecycle_confirm_window_hours,
        "active_hits": settings.lifecycle_active_hits,
        "active_window_hours": settings.lifecycle_active_window_hours,
        "ttl_active_days": settings.lifecycle_ttl_active_days,
        "ttl_confirmed_days": settings.lifecycle_ttl_confirmed_days,
        "ttl_provisional_days": settings.lifecycle_ttl_provisional_days,
        "archive_superseded_after_days": settings.lifecycle_archive_superseded_days,
        "archive_unused_after_days": settings.lifecycle_archive_unused_days,
    })
    raw = json.loads(settings.lifecycle_project_overrides or "{}")
    per_project = {p: base.with_overrides(v) for p, v in raw.items()}
    return lambda project: per_project.get(project or "", base)

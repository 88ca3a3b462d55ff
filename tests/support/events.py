"""Small event builders shared by e2e tests."""

from __future__ import annotations

from typing import Any


def november_event(i: int, thread: str, day: int, kind: str, content: str,
                   **attrs: Any) -> dict[str, Any]:
    """Event ``i`` of ``thread`` (user ``u1``, project ``shop``, role assistant) on
    2026-11-``day`` at 10:``i``."""
    event: dict[str, Any] = {
        "event_id": f"{thread}-{i}", "user_id": "u1", "project_id": "shop", "thread_id": thread,
        "ts": f"2026-11-{day:02d}T10:{i:02d}:00Z", "role": "assistant", "kind": kind,
        "content": content}
    if attrs:
        event["attrs"] = attrs
    return event

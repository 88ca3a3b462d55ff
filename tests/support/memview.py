"""Generated sessions for the browse and forget tests (issue 26): no shipped data needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from breadcrumb.stores.keys.store import new_key, sqlite_key_store


def event(user: str, thread: str, i: int, kind: str, content: str, day: int = 2,
          project: str = "shop", **attrs: Any) -> dict[str, Any]:
    """One contract event; ids derive from (user, thread, i) like an importer's."""
    out: dict[str, Any] = {
        "event_id": f"{user}-{thread}-{i}", "user_id": user, "project_id": project,
        "agent_id": f"agent-{user}", "thread_id": thread, "ts": f"2026-11-{day:02d}T10:{i:02d}:00Z",
        "role": "assistant", "kind": kind, "content": content}
    if attrs:
        out["attrs"] = attrs
    return out


def secret(user: str) -> str:
    """The exact value only ``user``'s db-setup thread holds."""
    return f"tok-ZX81-{user}-q7"


def changed_value(user: str) -> list[dict[str, Any]]:
    """Two sessions: DB_PORT 5432 (with a secret token) then 6432 a week later."""
    return [event(user, "db-setup", 0, "message", "Set up the database connection settings."),
            event(user, "db-setup", 1, "file_edit",
                  f"+DB_PORT=5432\n+API_TOKEN={secret(user)}", path=".env"),
            event(user, "db-setup", 2, "session_end", "end"),
            event(user, "pgbouncer", 0, "message", "Route the database through pgbouncer.", 9),
            event(user, "pgbouncer", 1, "file_edit", "+DB_PORT=6432", 9, path=".env"),
            event(user, "pgbouncer", 2, "session_end", "end", 9)]


def small_sessions(user: str, n: int, project: str = "shop") -> list[dict[str, Any]]:
    """``n`` closed one-topic sessions (one memory each), on different days."""
    out = []
    for k in range(n):
        thread = f"task-{k:02d}"
        out += [event(user, thread, 0, "message", f"Rename the helper number {k} in module "
                      f"m{k}.py and keep its tests green.", 10 + k, project),
                event(user, thread, 1, "tool_result", f"ok: {k} tests passed", 10 + k, project),
                event(user, thread, 2, "session_end", "end", 10 + k, project)]
    return out


def add_keys(data_dir: Path, grants: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Create keys (tenant, role) in the embedded key store; plaintexts by (tenant, role)."""
    store = sqlite_key_store(data_dir)
    out = {}
    for tenant, role in grants:
        record, out[(tenant, role)] = new_key(tenant, role)
        store.add(record)
    return out


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}

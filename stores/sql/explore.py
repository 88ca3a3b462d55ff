"""Reads of the dashboard's explorer (issue 47) over a SQL store, SQLite or MySQL: the
tenants a service holds, one thread's header, the threads by last event, and the history
of a fact key across a tenant's memories.

:class:`SqlExplore` is the store's ``explore`` object (port :class:`~stores.ports.tables.
Explorer`): it reads through the store's database and writes nothing. Every read but
:meth:`SqlExplore.list_tenants` (an admin's) is scoped to one ``user_id``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.browse import SqlBrowse, like_pattern, texts
from breadcrumb.stores.sql.core import SqlDatabase
from breadcrumb.stores.sql.log_text import content_sql

#: A thread's title: its first request, at most this many characters.
TITLE_CHARS = 160
#: A thread is titled by the first of its first TITLE_SCAN events that is a message.
TITLE_SCAN = 20


class SqlExplore:
    """The explorer's reads over one SQL database (see the module docstring)."""

    def __init__(self, db: SqlDatabase, browse: SqlBrowse) -> None:
        self.db = db
        self.browse = browse  # knows whether the lifecycle's facts table exists

    def list_tenants(self, limit: int = 500) -> list[dict[str, Any]]:
        """Every tenant with events or memories: events, memories, last event time; the
        tenants with the newest events first."""
        events = {str(t): (int(n), last) for t, n, last in (texts(r) for r in self.db.read(
            "SELECT user_id, COUNT(*), MAX(ts) FROM raw_events GROUP BY user_id"))}
        memories = {str(t): int(n) for t, n in (texts(r) for r in self.db.read(
            "SELECT user_id, COUNT(*) FROM agent_memories GROUP BY user_id"))}
        out = [{"tenant": t, "events": events.get(t, (0, None))[0],
                "memories": memories.get(t, 0), "last_ts": events.get(t, (0, None))[1]}
               for t in set(events) | set(memories)]
        out.sort(key=lambda x: (x["last_ts"] or "", x["tenant"]), reverse=True)
        return out[:limit]

    def _title(self, user_id: str, thread_id: str, first: int) -> str | None:
        """The first request of the thread (a user's message, else any message)."""
        rows = self.db.read(f"SELECT role, {content_sql(self.db.dialect)} FROM raw_events "
                            "WHERE user_id = ? AND thread_id = ? AND idx >= ? AND "
                            "kind = 'message' ORDER BY idx LIMIT ?",
                            (user_id, thread_id, first, TITLE_SCAN))
        said = [(str(role), str(content)) for role, content in (texts(r) for r in rows)
                if content is not None]
        pick = next((c for r, c in said if r == "user"), said[0][1] if said else None)
        if pick is None:
            return None
        line = " ".join(pick.split())
        return line if len(line) <= TITLE_CHARS else line[:TITLE_CHARS - 1] + "…"

    def thread_info(self, user_id: str, thread_id: str) -> dict[str, Any] | None:
        """Agent, project, events, first / last time and index, and the title of a stored
        thread; None when the tenant has no event in it."""
        rows = self.db.read(
            "SELECT MIN(agent_id), MIN(project_id), COUNT(*), MIN(ts), MAX(ts), MIN(idx), "
            "MAX(idx) FROM raw_events WHERE user_id = ? AND thread_id = ?",
            (user_id, thread_id))
        agent, project, n, first_ts, last_ts, i0, i1 = texts(rows[0]) if rows else (None,) * 7
        if not n:
            return None
        return {"agent_id": agent, "project_id": project, "event_count": int(n),
                "first_ts": first_ts, "last_ts": last_ts, "first_index": int(i0),
                "last_index": int(i1), "title": self._title(user_id, thread_id, int(i0))}

    def threads_by_last_event(self, user_id: str, limit: int = 100,
                              before: tuple[str, str] | None = None
                              ) -> tuple[list[dict[str, Any]], tuple[str, str] | None]:
        """The tenant's threads, the latest event first (keyset: ``before`` = the last
        ``(last_ts, thread_id)`` seen), each with its title."""
        having, params = "", [user_id]
        if before is not None:
            having = " HAVING MAX(ts) < ? OR (MAX(ts) = ? AND thread_id < ?)"
            params += [before[0], before[0], before[1]]
        rows = self.db.read(
            "SELECT thread_id, MIN(agent_id), MIN(project_id), COUNT(*), MIN(ts), MAX(ts), "
            "MIN(idx), MAX(idx) FROM raw_events WHERE user_id = ? GROUP BY thread_id"
            f"{having} ORDER BY MAX(ts) DESC, thread_id DESC LIMIT ?", (*params, limit + 1))
        out = [{"thread_id": t, "agent_id": a, "project_id": p, "event_count": int(n),
                "first_ts": f, "last_ts": la, "first_index": int(i0), "last_index": int(i1)}
               for t, a, p, n, f, la, i0, i1 in (texts(r) for r in rows[:limit])]
        for thread in out:
            thread["title"] = self._title(user_id, thread["thread_id"], thread["first_index"])
        more = len(rows) > limit and out
        return out, ((out[-1]["last_ts"], out[-1]["thread_id"]) if more else None)

    def fact_keys(self, user_id: str, text: str | None = None,
                  limit: int = 50) -> list[dict[str, Any]]:
        """The tenant's fact keys (``env:DB_PORT``), those holding ``text`` when given: how
        many values each took and its current one."""
        if not self.browse.has_facts():
            return []
        mysql = self.db.dialect.mysql
        where, params = "user_id = ?", [user_id]
        if text:
            # SQLite's LIKE ignores ASCII case; MySQL's LOWER is a no-op on VARBINARY keys
            fold = "LOWER(CONVERT(fact_key USING utf8mb4))" if mysql else "fact_key"
            where += f" AND {fold} LIKE ? ESCAPE '!'"
            params.append(like_pattern(text.lower() if mysql else text))
        rows = self.db.read(f"SELECT fact_key, COUNT(*), MAX(ts) FROM memory_facts WHERE "
                            f"{where} GROUP BY fact_key ORDER BY MAX(ts) DESC, fact_key "
                            "LIMIT ?", (*params, limit))
        keys = [(str(k), int(n), last) for k, n, last in (texts(r) for r in rows)]
        current = self._current_values(user_id, [k for k, _, _ in keys])
        return [{"key": k, "values": n, "last_ts": last, "current": current.get(k)}
                for k, n, last in keys]

    def _current_values(self, user_id: str, keys: Sequence[str]) -> dict[str, str]:
        if not keys:
            return {}
        rows = self.db.read(f"SELECT fact_key, value, ts FROM memory_facts WHERE user_id = ? "
                            f"AND state = 'current' AND fact_key IN ({s.marks(len(keys))}) "
                            "ORDER BY ts", (user_id, *keys))
        return {str(k): str(v) for k, v, _ in (texts(r) for r in rows)}  # the newest wins

    def fact_rows(self, user_id: str, key: str, limit: int = 500) -> list[dict[str, Any]]:
        """Every value ``key`` took in the tenant's memories, oldest first: the memory (its
        summary, status, thread and source range, what it superseded and what superseded
        it), the value, when it was said and whether it is current."""
        if not self.browse.has_facts():
            return []
        rows = self.db.read(
            "SELECT f.memory_id, f.value, f.ts, f.state, m.summary, m.status, "
            "m.source_thread_id, m.source_start_index, m.source_end_index, "
            "m.supersedes_memory_id, m.superseded_by FROM memory_facts f JOIN agent_memories "
            "m ON m.id = f.memory_id AND m.user_id = f.user_id WHERE f.user_id = ? AND "
            "f.fact_key = ? ORDER BY f.ts, f.memory_id LIMIT ?", (user_id, key, limit))
        return [{"memory_id": mid, "value": value, "ts": ts, "state": state,
                 "summary": summary, "status": status, "thread_id": thread,
                 "start_index": int(start), "end_index": int(end), "supersedes": older,
                 "superseded_by": newer}
                for mid, value, ts, state, summary, status, thread, start, end, older, newer
                in (texts(r) for r in rows)]

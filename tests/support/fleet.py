"""The cluster demo's fleet (``breadcrumb fleet``, scripts/demo_cluster.sh) as test data.

:func:`fleet_events` runs the demo's own generator (:class:`SimulatedAgent`) and stamps
each event half a second after the previous one (the demo's default rate, 2 events/s per
agent, agents interleaved) so the order of the values is the order they were set.
:func:`fleet_questions` asks, for every session, the demo's closing question — "what
default value did we give ENV in FUNC?" — and names the value the evidence must hold:
the session's own, or, where a later session of the same user and project set ENV again
(a change of the same setting: supersession), the newest one. A session of another
project sets that project's own ENV: it replaces nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from breadcrumb.commands.fleet import SimulatedAgent

#: the demo's own reading of a session's first message (scripts/demo_cluster.sh, step 6)
TASK = re.compile(r"^(\w+) in \S+ breaks under load\. Set (\w+)=(\S+) and")
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Asked:
    """One demo question and the value its evidence must hold."""

    user_id: str
    thread_id: str
    env: str
    query: str
    value: str  # what this session set
    current: str  # the newest value of the same setting for this user and project

    @property
    def reset_later(self) -> bool:
        return self.value != self.current


def fleet_events(seed: int = 1, agents: int = 8, steps: int = 36, users: int = 4,
                 run_id: str | None = None) -> list[dict[str, Any]]:
    """``agents`` x ``steps`` events of the demo's generator (``run_id`` as the CLI's
    ``--seed`` makes it), closing sessions cut short as the CLI does."""
    fleet = [SimulatedAgent(n, run_id or f"seed{seed}", seed, users) for n in range(agents)]
    events = [agent.next_event() for _ in range(steps) for agent in fleet]
    events += [e for e in (agent.close_session() for agent in fleet) if e is not None]
    for i, event in enumerate(events):
        event["ts"] = (START + timedelta(milliseconds=500 * i)).isoformat().replace(
            "+00:00", "Z")
    return events


def fleet_questions(events: list[dict[str, Any]]) -> list[Asked]:
    """The demo's question for every session, with the value its evidence must hold."""
    sessions = []
    for event in events:
        task = TASK.search(event["content"]) if event["kind"] == "message" else None
        if task is None:
            continue
        func, env, value = task.groups()
        said = max(e["ts"] for e in events
                   if e["thread_id"] == event["thread_id"] and value in e["content"])
        sessions.append((event, func, env, value, said))
    out = []
    for event, func, env, value, _said in sessions:
        same = [s for s in sessions if s[0]["user_id"] == event["user_id"] and s[2] == env
                and s[0].get("project_id") == event.get("project_id")]
        current = max(same, key=lambda s: s[4])[3]
        out.append(Asked(event["user_id"], event["thread_id"], env,
                         f"what default value did we give {env} in {func}?", value, current))
    return out

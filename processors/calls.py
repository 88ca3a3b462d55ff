"""Which call a tool's output answers: an output is about the command that made it.

``npm error code ERESOLVE`` names neither ``next-auth`` nor ``install``; the call above it,
``npm install next-auth@beta``, does. A question that names the call ("what npm error
code did installing next-auth@beta fail with?") is asking about that output's lines, so
recall's word-exact scorer lets the question terms of a result's call count for the
result's lines; and the ``key: value`` lines of a file the call read are that file's
settings (:mod:`.facts`), not settings of the whole tenant. Pure.

A result is paired with its call by the ``tool_use_id`` both carry where the importer kept
it, else with the oldest call still waiting since the last turn (calls made in parallel
are answered in order).
"""

from __future__ import annotations

from collections.abc import Sequence

from breadcrumb.topics.records import Event

#: the kinds of event that answer a call
RESULT_KINDS = frozenset({"tool_result", "test_result"})
MAX_CALL_CHARS = 2000


def calls_of(events: Sequence[Event]) -> dict[str, str]:
    """Result event id -> the text of the call it answers (events of one range, in order)."""
    out: dict[str, str] = {}
    waiting: list[Event] = []
    for event in events:
        if event.kind == "tool_call":
            waiting.append(event)
        elif event.kind in RESULT_KINDS:
            call = _pair(event, waiting)
            if call is not None:
                waiting.remove(call)
                out[event.event_id] = call.content[:MAX_CALL_CHARS]
        elif event.kind == "message":  # a new turn: what was not answered never will be
            waiting.clear()
    return out


def _pair(result: Event, waiting: list[Event]) -> Event | None:
    use_id = result.attrs.get("tool_use_id")
    if use_id:
        for call in waiting:
            if call.attrs.get("tool_use_id") == use_id:
                return call
    return waiting[0] if waiting else None

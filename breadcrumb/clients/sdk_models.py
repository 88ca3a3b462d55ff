"""What the SDK sends and gets back: events built from chat messages, typed results.

Pure (standard library + pydantic). :func:`build_events` turns chat messages
(``{"role", "content", "tool_calls"?}``) or partial events into contract events,
filling ``event_id`` (deterministic: a retried ``add`` is a duplicate, not a copy),
``ts`` (now, unless given), tenant, thread, project and agent.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: uuid5 namespace of events the SDK names.
SDK_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://breadcrumb/sdk/v1")
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system",
          "tool": "tool", "function": "tool"}


class BreadcrumbError(RuntimeError):
    """A request the service refused (its contract error message), or a misuse."""


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class SourceRange(_Loose):
    """Where a memory came from: events ``start_index..end_index`` of a thread."""

    thread_id: str
    start_index: int
    end_index: int


class Memory(_Loose):
    """A memory as recall returns it (the contract's fields; others kept as extras)."""

    id: str
    summary: str = ""
    source_range: SourceRange
    status: str = "active"
    tier: str = "provisional"
    score: float = 0.0
    tags: list[str] = Field(default_factory=list)


class EvidenceLine(_Loose):
    """One verbatim line and the event it was cut from."""

    event_id: str
    event_index: int
    text: str


class Evidence(_Loose):
    """RecalledEvidence: verbatim text cut from the raw events of one range."""

    memory_id: str | None = None
    source_thread_id: str
    source_start_index: int
    source_end_index: int
    matched_event_ids: list[str] = Field(default_factory=list)
    extracted_text: str = ""
    reason: str = ""
    lines: list[EvidenceLine] = Field(default_factory=list)


class RecallResult(_Loose):
    """RecallResponse: memories and, for exact values, verbatim evidence."""

    query: str
    classification: str
    level: int = 0
    memories: list[Memory] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    token_cost: int = 0
    latency_ms: float = 0.0

    @property
    def text(self) -> str:
        """All evidence text (the verbatim lines), one range after another."""
        return "\n".join(e.extracted_text for e in self.evidence)


class Rejected(_Loose):
    """An event the service refused, by its position in the call."""

    position: int
    error: str = ""


class AddResult(BaseModel):
    """What ``add`` did: the ids it used and, over HTTP, the service's counts."""

    event_ids: list[str]
    accepted: int = 0
    duplicates: int = 0
    rejected: list[Rejected] = Field(default_factory=list)
    transport: str = "http"


def build_events(items: Iterable[Mapping[str, Any]], *, user_id: str, thread_id: str,
                 project_id: str | None = None, agent_id: str | None = None,
                 now: datetime | None = None) -> list[dict[str, Any]]:
    """Contract events for chat messages or partial events, in order."""
    stamp = _iso(now or datetime.now(UTC))
    base = {"user_id": user_id, "thread_id": thread_id, "project_id": project_id,
            "agent_id": agent_id}
    out: list[dict[str, Any]] = []
    for position, item in enumerate(items):
        for sub, draft in enumerate(_drafts(dict(item))):
            event = {**{k: v for k, v in base.items() if v is not None}, **draft}
            event.setdefault("ts", stamp)
            event.setdefault("event_id", event_id(user_id, thread_id, f"{position}.{sub}", draft))
            out.append(event)
    return out


def event_id(user_id: str, thread_id: str, position: str, draft: Mapping[str, Any]) -> str:
    """uuid5 over tenant, thread, position in the call and the event's own content."""
    body = json.dumps({k: draft.get(k) for k in ("role", "kind", "content", "tool", "ts",
                                                 "index")}, sort_keys=True, default=str)
    digest = hashlib.sha256(body.encode()).hexdigest()[:32]
    return str(uuid.uuid5(SDK_NAMESPACE, f"{user_id}/{thread_id}/{position}/{digest}"))


def _drafts(item: dict[str, Any]) -> list[dict[str, Any]]:
    """An event stays as given; a chat message becomes a message and its tool calls."""
    if "kind" in item or "event_id" in item:
        return [item]
    role = _ROLES.get(str(item.get("role")), "user")
    drafts: list[dict[str, Any]] = []
    text = _text(item.get("content"))
    extra: dict[str, Any] = {k: item[k] for k in ("ts", "index", "attrs") if k in item}
    if text or role == "tool":
        kind = "tool_result" if role == "tool" else "message"
        draft = {"role": role, "kind": kind, "content": text, **extra}
        if role == "tool" and isinstance(item.get("name"), str):
            draft["tool"] = item["name"]
        drafts.append(draft)
    for call in item.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            arguments = function.get("arguments", "")
            drafts.append({"role": "assistant", "kind": "tool_call",
                           "tool": str(function.get("name") or "tool")[:128],
                           "content": arguments if isinstance(arguments, str)
                           else json.dumps(arguments), **extra})
    return drafts


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content
                         if isinstance(p, dict) and "text" in p)
    return "" if content is None else str(content)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")

"""Record schemas that flow between processors, topics and stores.

Everything here is a frozen dataclass with ``to_dict`` / ``from_dict`` so the same
record travels as JSON on a Kafka topic, as a row in SQL and as a payload in Qdrant.
Field names follow the contract, docs/contract/API.md (``source_range``, ``query_hints``,
``retrieve_when``, ``RecalledEvidence``).
"""

from __future__ import annotations

import base64
import re
from copy import deepcopy
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant", "system", "tool"]
Kind = Literal[
    "message",
    "tool_call",
    "tool_result",
    "file_edit",
    "test_result",
    "topic_change",
    "session_end",
    "note",
]
Status = Literal["active", "superseded", "archived", "conflicted"]
Tier = Literal["provisional", "confirmed", "active"]

#: Kinds after which a source range may be cut (contract: boundary markers).
BOUNDARY_KINDS: frozenset[str] = frozenset(
    {"tool_result", "file_edit", "test_result", "topic_change"}
)

EVENT_FIELDS: tuple[str, ...] = (
    "event_id",
    "user_id",
    "project_id",
    "agent_id",
    "thread_id",
    "index",
    "ts",
    "role",
    "kind",
    "content",
    "tool",
    "attrs",
    "tokens",
)


@dataclass(frozen=True, slots=True)
class Event:
    """One validated agent event (contract: event.schema.json).

    ``index`` is ``None`` until the pipeline assigns it; stored events always have it.
    ``content`` is kept byte for byte.
    """

    event_id: str
    user_id: str
    thread_id: str
    ts: str
    role: str
    kind: str
    content: str
    project_id: str | None = None
    agent_id: str | None = None
    index: int | None = None
    tool: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    tokens: int | None = None

    @property
    def thread_key(self) -> str:
        """The Kafka message key and state key (see :func:`thread_key`)."""
        return thread_key(self.user_id, self.thread_id)

    def to_dict(self) -> dict[str, Any]:
        """The event as contract JSON (optional fields left out when unset)."""
        out: dict[str, Any] = {}
        for name in EVENT_FIELDS:
            value = getattr(self, name)
            if value is None or (name == "attrs" and not value):
                continue
            out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        """Build from an already-validated mapping."""
        kwargs = {k: data[k] for k in EVENT_FIELDS if k in data and data[k] is not None}
        kwargs.setdefault("attrs", {})
        return cls(**kwargs)

    def with_index(self, index: int, tokens: int) -> Event:
        """A copy with the pipeline-assigned index and token count."""
        data = self.to_dict()
        data["index"] = index
        data["tokens"] = tokens
        return Event.from_dict(data)


def thread_key(user_id: str, thread_id: str) -> str:
    """Message key and state key of a thread: ``{user_id}/{thread_id}`` with ``%`` and ``/``
    in the user id escaped (``%25``, ``%2F``).

    The first ``/`` always ends the user id, so two tenants never share a key (user
    ``acme/x`` + thread ``y`` is ``acme%2Fx/y``; user ``acme`` + thread ``x/y`` is
    ``acme/x/y``). Ids without ``%`` or ``/`` in the user id keep the historical key.
    """
    return f"{_KEY_ESCAPE.sub(_escape, user_id)}/{thread_id}"


def split_thread_key(key: str) -> tuple[str, str]:
    """``(user_id, thread_id)`` of a :func:`thread_key` (its exact inverse)."""
    user, _, thread = key.partition("/")
    return _KEY_UNESCAPE.sub(_unescape, user), thread


_KEY_ESCAPE = re.compile("[%/]")
_KEY_UNESCAPE = re.compile("%(25|2F)")


def _escape(match: re.Match[str]) -> str:
    return "%25" if match.group(0) == "%" else "%2F"


def _unescape(match: re.Match[str]) -> str:
    return "%" if match.group(1) == "25" else "/"


@dataclass(frozen=True, slots=True)
class SparseVector:
    """Lexical recall surface: term ids and weights (IDF is applied by the index)."""

    indices: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class SourceRange:
    """An inclusive range of event indices in one thread: the map's destination."""

    thread_id: str
    start_index: int
    end_index: int

    def to_dict(self) -> dict[str, Any]:
        # scalars: the dict asdict() builds, without its recursive deep copy
        return {"thread_id": self.thread_id, "start_index": self.start_index,
                "end_index": self.end_index}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SourceRange:
        return cls(str(data["thread_id"]), int(data["start_index"]), int(data["end_index"]))


@dataclass(frozen=True, slots=True)
class ClosedRange:
    """What the segmenter emits when it cuts: the range plus who owns it."""

    user_id: str
    project_id: str | None
    source_range: SourceRange
    event_ids: tuple[str, ...]
    # "max_events" | "max_tokens" | "boundary" | "topic_change" | "session_end" | "idle"
    # | "oversized" | "flush"
    reason: str


@dataclass(frozen=True, slots=True)
class Fact:
    """An exact value with a key, so a later change of the same key is detectable."""

    key: str  # e.g. "env:AUTH_ALLOWED_DOMAINS" or "file:src/auth.ts#EMAIL_RE"
    value: str
    event_id: str
    event_index: int

    def to_dict(self) -> dict[str, Any]:
        # scalars: the dict asdict() builds, without its recursive deep copy
        return {"key": self.key, "value": self.value, "event_id": self.event_id,
                "event_index": self.event_index}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fact:
        return cls(
            str(data["key"]), str(data["value"]), str(data["event_id"]), int(data["event_index"])
        )


@dataclass(frozen=True, slots=True)
class Observation:
    """A breadcrumb: a summary that points back to its verbatim source range."""

    id: str
    user_id: str
    project_id: str | None
    summary: str
    source_range: SourceRange
    tags: tuple[str, ...]
    query_hints: tuple[str, ...]
    retrieve_when: str
    importance: float
    created_at: str  # ts of the last event of the range (deterministic for replay)
    kind: str = "observation"
    status: str = "active"
    tier: str = "provisional"
    supersedes_memory_id: str | None = None
    facts: tuple[Fact, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def embedding_text(self) -> str:
        """The text of the dense recall surface."""
        return "\n".join(
            [self.summary, self.retrieve_when, " ".join(self.tags), " ".join(self.query_hints)]
        )

    def to_dict(self) -> dict[str, Any]:
        # asdict()'s dict (same keys, same order) with lists for the tuples; only the
        # metadata needs a deep copy (asdict copied every field, the facts twice)
        return {
            "id": self.id, "user_id": self.user_id, "project_id": self.project_id,
            "summary": self.summary, "source_range": self.source_range.to_dict(),
            "tags": list(self.tags), "query_hints": list(self.query_hints),
            "retrieve_when": self.retrieve_when, "importance": self.importance,
            "created_at": self.created_at, "kind": self.kind, "status": self.status,
            "tier": self.tier, "supersedes_memory_id": self.supersedes_memory_id,
            "facts": [f.to_dict() for f in self.facts], "metadata": deepcopy(self.metadata),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Observation:
        return cls(
            id=str(data["id"]),
            user_id=str(data["user_id"]),
            project_id=data.get("project_id"),
            summary=str(data["summary"]),
            source_range=SourceRange.from_dict(data["source_range"]),
            tags=tuple(data.get("tags") or ()),
            query_hints=tuple(data.get("query_hints") or ()),
            retrieve_when=str(data.get("retrieve_when") or ""),
            importance=float(data.get("importance") or 0.0),
            created_at=str(data["created_at"]),
            kind=str(data.get("kind") or "observation"),
            status=str(data.get("status") or "active"),
            tier=str(data.get("tier") or "provisional"),
            supersedes_memory_id=data.get("supersedes_memory_id"),
            facts=tuple(Fact.from_dict(f) for f in data.get("facts") or ()),
            metadata=dict(data.get("metadata") or {}),
        )


@dataclass(frozen=True, slots=True)
class Chunk:
    """A line-aware, token-bounded piece of a source range (the ``source_chunks`` index)."""

    id: str
    memory_id: str
    user_id: str
    project_id: str | None
    thread_id: str
    event_id: str
    event_index: int
    char_start: int  # offsets into the event's content
    char_end: int
    text: str
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        # Every field is a str, int or None: the dict asdict() would build, without
        # its recursive deep copy (this runs for every chunk of every memory).
        return {
            "id": self.id, "memory_id": self.memory_id, "user_id": self.user_id,
            "project_id": self.project_id, "thread_id": self.thread_id,
            "event_id": self.event_id, "event_index": self.event_index,
            "char_start": self.char_start, "char_end": self.char_end, "text": self.text,
            "tokens": self.tokens,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Chunk:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A rejected input kept with the reason (failures are data)."""

    reason: str
    payload: str  # what was received: its JSON text, or ``base64:`` + its bytes (letter_payload)
    received_at: str
    field: str | None = None
    source: str = "http"  # "http" | "kafka" | "cli"
    event_id: str | None = None
    user_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def original_bytes(self) -> bytes:
        """The bytes that were received (see :func:`letter_payload`)."""
        if self.payload.startswith(BASE64_PREFIX):
            return base64.b64decode(self.payload[len(BASE64_PREFIX):], validate=True)
        return self.payload.encode()


#: A dead letter's payload that is not UTF-8 text: the received bytes, base64-encoded
#: (text that itself starts with this prefix is stored base64 too: never ambiguous).
BASE64_PREFIX = "base64:"


def letter_payload(value: bytes) -> str:
    """A received value as a dead letter's payload, with its bytes recoverable: the text
    itself when it is UTF-8 (without NUL, which SQL text columns refuse), else ``base64:``
    + its bytes (an undecodable message keeps every byte, not replacement characters)."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        text = BASE64_PREFIX  # forces the base64 form below
    if text.startswith(BASE64_PREFIX) or "\x00" in text:
        return BASE64_PREFIX + base64.b64encode(value).decode("ascii")
    return text


@dataclass(frozen=True, slots=True)
class FlushMarker:
    """A keyed control message: close the thread's open window (idle timeout, ingest end)."""

    user_id: str
    thread_id: str
    ts: str
    reason: str = "idle"

    def to_dict(self) -> dict[str, Any]:
        return {"_control": "flush", **asdict(self)}

    @staticmethod
    def is_flush(data: dict[str, Any]) -> bool:
        return data.get("_control") == "flush"


@dataclass(frozen=True, slots=True)
class MemoryStatusChange:
    """A value on the compacted ``memory-status`` topic (key = memory id)."""

    memory_id: str
    user_id: str
    status: str
    tier: str
    at: str
    actor: str
    reason: str
    supersedes_memory_id: str | None = None
    superseded_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        # scalars: the dict asdict() builds, without its recursive deep copy (a batch
        # builds several per lifecycle change)
        return {"memory_id": self.memory_id, "user_id": self.user_id, "status": self.status,
                "tier": self.tier, "at": self.at, "actor": self.actor, "reason": self.reason,
                "supersedes_memory_id": self.supersedes_memory_id,
                "superseded_by": self.superseded_by}

"""Request bodies of the HTTP contract (responses are plain dicts shaped by the contract)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from breadcrumb.processors.json_sanity import MAX_INDEX
from breadcrumb.topics.schema import event_schema

#: Hard ceiling of ``tags`` in a request; the setting ``limit_tags`` is usually lower.
MAX_TAGS = 1000
Tag = Annotated[str, Field(min_length=1, max_length=128)]


def _aware(value: datetime) -> datetime:
    """A time without an offset is UTC (as event times are)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


#: An ISO 8601 time of a request (``as_of``, ``now``); naive means UTC.
RequestTime = Annotated[datetime, AfterValidator(_aware)]
_REQUEST_TIME: TypeAdapter[datetime] = TypeAdapter(RequestTime)


def request_time(name: str, value: str) -> datetime:
    """``value`` read as the request field ``name`` reads it; :class:`ValueError` with a
    one-line reason when it is no time (the MCP tool checks its arguments with it)."""
    try:
        return _REQUEST_TIME.validate_python(value)
    except ValidationError as exc:
        raise ValueError(f"{name}: {exc.errors()[0]['msg'].lower()} (got {value!r}; "
                         "e.g. 2026-03-12T00:00:00Z)") from None


class RecallRequest(BaseModel):
    """Contract: RecallRequest."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=128)
    query: str = Field(min_length=1, max_length=4000)
    project_id: str | None = Field(None, max_length=128)
    k: int = Field(5, ge=1, le=50)
    max_tokens: int = Field(800, ge=1, le=32000)
    mode: Literal["auto", "summary", "source"] = "auto"
    include_superseded: bool = False
    include_archived: bool = False
    thread_id: str | None = Field(None, min_length=1, max_length=256)
    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS)
    # extension: "brief" answers compact text (query_api/brief.py) instead of the full JSON
    view: Literal["full", "brief"] = "full"
    # extension (docs/recall-in-time.md): recall as it stood at ``as_of`` (events said at or
    # before it, memories with the status they had then); ``now`` anchors "yesterday",
    # "3週間前", ... (default: the request time)
    as_of: RequestTime | None = None
    now: RequestTime | None = None
    # extension: add "explain" (each stage's candidates, ranges, budget; recall/explain.py)
    explain: bool = False
    # extension (issue 47): a look, not a use — no hit, no last_used_at (TTL) touch, hence
    # no promotion; the dashboard and inspector send it, agents' recalls leave it false
    read_only: bool = False


class RecallSourceRequest(BaseModel):
    """Contract: the article's recallMemorySource."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=128)
    source_thread_id: str = Field(min_length=1, max_length=256)
    source_start_index: int = Field(ge=0, le=MAX_INDEX)
    source_end_index: int = Field(ge=0, le=MAX_INDEX)
    query: str = Field(min_length=1, max_length=4000)
    max_tokens: int = Field(800, ge=1, le=32000)


class FlushRequest(BaseModel):
    """Extension: close a thread's open window now (as its idle timeout would)."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=128)
    thread_id: str = Field(min_length=1, max_length=256)


def _events_body() -> dict[str, Any]:
    """OpenAPI ``requestBody`` of ``POST /v1/events``: ``{"events": [Event, ...]}``, the Event
    being the contract's ``event.schema.json`` itself (so schemathesis fuzzes it too)."""
    event = {k: v for k, v in event_schema().items() if not k.startswith("$")}
    body = {
        "type": "object", "required": ["events"], "additionalProperties": False,
        "properties": {"events": {
            "type": "array", "items": event,
            "description": "at most limit_batch_events events (413 beyond)"}},
    }
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": body}}}}


#: ``openapi_extra`` of ``POST /v1/events`` (the route reads its body itself).
EVENTS_BODY: dict[str, Any] = _events_body()

"""Request bodies of the HTTP contract (responses are plain dicts shaped by the contract)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from breadcrumb.processors.json_sanity import MAX_INDEX
from breadcrumb.topics.schema import event_schema

#: Hard ceiling of ``tags`` in a request; the setting ``limit_tags`` is usually lower.
MAX_TAGS = 1000
Tag = Annotated[str, Field(min_length=1, max_length=128)]


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
    # extension: add "explain" (each stage's candidates, ranges, budget; recall/explain.py)
    explain: bool = False


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

"""Request bodies of the HTTP contract (responses are plain dicts shaped by the contract)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class RecallRequest(BaseModel):
    """Contract: RecallRequest."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=128)
    query: str = Field(min_length=1, max_length=4000)
    project_id: str | None = None
    k: int = Field(5, ge=1, le=50)
    max_tokens: int = Field(800, ge=1, le=32000)
    mode: Literal["auto", "summary", "source"] = "auto"
    include_superseded: bool = False
    include_archived: bool = False
    thread_id: str | None = None
    tags: list[str] | None = None
    # extension: "brief" answers compact text (query_api/brief.py) instead of the full JSON
    view: Literal["full", "brief"] = "full"


class RecallSourceRequest(BaseModel):
    """Contract: the article's recallMemorySource."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=128)
    source_thread_id: str = Field(min_length=1)
    source_start_index: int = Field(ge=0)
    source_end_index: int = Field(ge=0)
    query: str = Field(min_length=1, max_length=4000)
    max_tokens: int = Field(800, ge=1, le=32000)


class FlushRequest(BaseModel):
    """Extension: close a thread's open window now (as its idle timeout would)."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=128)
    thread_id: str = Field(min_length=1, max_length=256)

"""The event contract (event.schema.json; the contract: docs/contract/API.md) as a validator."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema comes with the [server] / [kafka] extras, not the core
    from jsonschema import Draft202012Validator


@lru_cache(maxsize=1)
def event_schema() -> dict[str, Any]:
    """The contract's JSON schema for an agent event (v1)."""
    schema_file = resources.files("breadcrumb.topics").joinpath("schemas/event.schema.json")
    text = schema_file.read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@lru_cache(maxsize=1)
def event_validator() -> Draft202012Validator:
    """A compiled validator for the event schema (needs ``jsonschema``)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(event_schema())

"""Event validation: a mapping in, an ``Event`` or a ``Rejection`` (failure as data) out."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from breadcrumb.processors.json_sanity import MAX_INDEX, bad_text, json_problem, printable
from breadcrumb.topics.records import Event
from breadcrumb.topics.schema import event_schema, event_validator

_REQUIRED_RE = re.compile(r"'([^']+)' is a required property")
_EXTRA_RE = re.compile(r"\('([^']+)'")


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why an input was refused, naming the field when there is one."""

    reason: str
    field: str | None = None

    def message(self) -> str:
        return f"field '{self.field}': {self.reason}" if self.field else self.reason


#: Nesting allowed inside ``attrs`` when no :class:`EventLimits` says otherwise.
HARD_ATTRS_DEPTH = 64


@dataclass(frozen=True, slots=True)
class EventLimits:
    """Size limits applied where events enter (settings ``limit_*``); the processor keeps
    the defaults, so what was once accepted is never refused on replay."""

    content_chars: int | None = None
    attrs_depth: int = HARD_ATTRS_DEPTH


NO_LIMITS = EventLimits()


def validate_event(data: Any, limits: EventLimits = NO_LIMITS) -> Event | Rejection:
    """Check one event against the contract; the first error names its field.

    Every event first passes :func:`sanity` (valid Unicode, 64-bit integers, finite
    numbers, bounded nesting, indices within :data:`MAX_INDEX`). The common well-formed
    event then passes :func:`plainly_valid` (about 10x cheaper than the JSON schema);
    anything else is judged by the schema itself.
    """
    if isinstance(data, dict):
        insane = sanity(data, limits)
        if insane is not None:
            return insane
    if plainly_valid(data):
        return Event.from_dict(data)
    if not isinstance(data, dict):
        return Rejection(f"an event must be a JSON object, got {type(data).__name__}")
    try:
        validator = event_validator()
    except ModuleNotFoundError:  # a core install (no jsonschema): the SDK's own shape check
        return explain_shape(data) or Event.from_dict(data)
    errors = sorted(validator.iter_errors(data), key=lambda e: (list(e.path), e.message))
    if errors:
        return _missing(errors) or _rejection_from(errors[0])
    ts_problem = _check_timestamp(data["ts"])
    if ts_problem:
        return Rejection(ts_problem, "ts")
    return Event.from_dict(data)


def sanity(data: dict[str, Any], limits: EventLimits = NO_LIMITS) -> Rejection | None:
    """The rules no schema states: see :mod:`processors.json_sanity`, plus
    ``index, tokens <= MAX_INDEX`` (integers only) and the ``limits``."""
    for name, value in data.items():
        kind = type(value)
        if kind is str:  # the common case, inline: most ids are ASCII
            if not value.isascii() and bad_text(value):
                return Rejection("is not valid Unicode (lone surrogate)", printable(str(name)))
            continue
        if name in ("index", "tokens"):  # the schema's "integer" would take 3.0, or 2**63
            if kind is float:
                return Rejection("must be an integer", name)
            if kind is int and value > MAX_INDEX:
                return Rejection(f"must be at most {MAX_INDEX}", name)
        if value is None or (kind is dict and not value):
            continue
        depth = limits.attrs_depth if name == "attrs" else HARD_ATTRS_DEPTH
        found = json_problem(value, printable(str(name)), depth)
        if found is not None:
            return Rejection(found[1], printable(found[0]))
    content = data.get("content")
    if limits.content_chars is not None and isinstance(content, str) \
            and len(content) > limits.content_chars:
        return Rejection(f"is longer than {limits.content_chars} characters "
                         "(limit_content_chars)", "content")
    return None


def _missing(errors: list[Any]) -> Rejection | None:
    """Every missing required field in one rejection (None when none is missing)."""
    names = [printable(m.group(1)) for e in errors if e.validator == "required"
             and not list(e.path) and (m := _REQUIRED_RE.search(e.message))]
    return missing_fields(names) if names else None


def missing_fields(names: list[str]) -> Rejection:
    """``field 'a': is required`` for one; the first named, then every other, for more."""
    names = sorted(set(names))
    if len(names) == 1:
        return Rejection("is required", names[0])
    others = ", ".join(f"'{n}'" for n in names[1:])
    return Rejection(f"is required, and so are {others}", names[0])


def _rejection_from(error: Any) -> Rejection:
    path = [str(p) for p in error.path]
    if error.validator == "required":
        match = _REQUIRED_RE.search(error.message)
        return Rejection("is required", printable(match.group(1)) if match else None)
    if error.validator == "additionalProperties":
        match = _EXTRA_RE.search(error.message)
        name = match.group(1) if match else None
        return Rejection("is not a field of the event schema", name and printable(name))
    return Rejection(printable(error.message)[:500], printable(".".join(path)) or None)


def _check_timestamp(value: str) -> str | None:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return f"{value!r} is not an RFC 3339 date-time"
    if parsed.tzinfo is None:
        return f"{value!r} has no UTC offset (RFC 3339 needs one, e.g. 'Z' or '+09:00')"
    return None


@lru_cache(maxsize=1)
def _shape() -> tuple[frozenset[str], dict[str, tuple[bool, int]], frozenset[str],
                      frozenset[str]]:
    """Fields, string limits and enums, read from the contract's schema itself."""
    schema = event_schema()
    props: dict[str, Any] = schema["properties"]
    strings = {name: (name in schema["required"], int(spec.get("maxLength", 1 << 30)))
               for name, spec in props.items()
               if name not in ("ts", "content") and "string" in _types(spec)}
    return (frozenset(props), strings, frozenset(props["role"]["enum"]),
            frozenset(props["kind"]["enum"]))


def _types(spec: dict[str, Any]) -> list[str]:
    kind = spec.get("type", [])
    return [kind] if isinstance(kind, str) else list(kind)


def plainly_valid(data: Any) -> bool:
    """A strict subset of the contract, checked ~10x faster than the JSON schema.

    True only for events ``validate_event`` accepts too (tested against it); False
    means "ask ``validate_event``", never "invalid".
    """
    if type(data) is not dict:
        return False
    fields, strings, roles, kinds = _shape()
    if not fields.issuperset(data):
        return False
    for name, (required, limit) in strings.items():
        value = data.get(name)
        if value is None and not required:
            continue
        if type(value) is not str or not 0 < len(value) <= limit:
            return False
    role, kind = data.get("role"), data.get("kind")
    if type(role) is not str or role not in roles or type(kind) is not str or kind not in kinds:
        return False
    if type(data.get("content")) is not str or type(data.get("attrs", {})) is not dict:
        return False
    for name in ("index", "tokens"):
        number = data.get(name)
        if number is not None and (type(number) is not int or not 0 <= number <= MAX_INDEX):
            return False
    return _aware_time(data.get("ts"))


def explain_shape(data: dict[str, Any]) -> Rejection | None:
    """The first rule of :func:`plainly_valid` that ``data`` breaks, naming its field.

    ``None`` exactly when :func:`plainly_valid` accepts. Used instead of the JSON schema
    when ``jsonschema`` is not installed (the SDK-only core install); the server checks
    the full schema again.
    """
    fields, strings, roles, kinds = _shape()
    absent = [name for name in event_schema()["required"] if name not in data]
    if absent:
        return missing_fields(absent)
    for name in sorted(set(data) - fields):
        return Rejection("is not a field of the event schema", name)
    for name, (required, limit) in strings.items():
        value = data.get(name)
        if value is None and not required:
            continue
        if type(value) is not str or not 0 < len(value) <= limit:
            return Rejection(f"must be a string of 1 to {limit} characters", name)
    if data.get("role") not in roles or type(data.get("role")) is not str:
        return Rejection(f"must be one of {sorted(roles)}", "role")
    if data.get("kind") not in kinds or type(data.get("kind")) is not str:
        return Rejection(f"must be one of {sorted(kinds)}", "kind")
    if type(data.get("content")) is not str:
        return Rejection("must be a string", "content")
    if type(data.get("attrs", {})) is not dict:
        return Rejection("must be an object", "attrs")
    for name in ("index", "tokens"):
        number = data.get(name)
        if number is not None and (type(number) is not int or number < 0):
            return Rejection("must be a non-negative integer", name)
    if not _aware_time(data.get("ts")):
        problem = _check_timestamp(data["ts"]) if type(data["ts"]) is str else None
        return Rejection(problem or "must be an RFC 3339 date-time string", "ts")
    return None


def _aware_time(value: Any) -> bool:
    if type(value) is not str:
        return False
    try:
        return datetime.fromisoformat(value).tzinfo is not None
    except ValueError:
        return False

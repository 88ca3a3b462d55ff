"""What every JSON value must be before Breadcrumb stores or echoes it (issue 12).

Fixed rules, not knobs: strings are valid Unicode (no lone surrogates, which no UTF-8
encoder, SQL driver or Kafka serializer accepts), integers fit in 64 bits, numbers are
finite, objects have string keys, nesting is bounded. :func:`json_problem` walks a value
and names the first offending path; :func:`loads` parses JSON text so that what the
standard parser would let through silently (``NaN``, ``1e999``) is kept visible for it.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: Largest event index / token count: exact in every JSON parser (2**53 - 1).
MAX_INDEX = 2**53 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


class NonFinite:
    """A number the JSON text held that is not a finite double (``NaN``, ``1e999``)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


class TooDeep(ValueError):
    """The JSON text nests deeper than the parser's recursion allows."""


def _float(text: str) -> float | NonFinite:
    value = float(text)
    return value if math.isfinite(value) else NonFinite(text)


def loads(raw: bytes | str) -> Any:
    """Parse JSON text; non-finite numbers come back as :class:`NonFinite` markers.

    Raises ``ValueError`` (``json.JSONDecodeError`` / ``UnicodeDecodeError``) for text that
    is not JSON and :class:`TooDeep` for nesting beyond Python's recursion limit.
    """
    try:
        return json.loads(raw, parse_constant=NonFinite, parse_float=_float)
    except RecursionError as exc:
        raise TooDeep("JSON nests too deeply") from exc


def bad_text(value: str) -> bool:
    """True when ``value`` holds a lone surrogate (not encodable as UTF-8)."""
    return not value.isascii() and _SURROGATE.search(value) is not None


def json_problem(value: Any, path: str = "", max_depth: int = 64,
                 int_range: tuple[int, int] = (INT64_MIN, INT64_MAX)) -> tuple[str, str] | None:
    """``(path, reason)`` of the first value that breaks the rules, or None.

    ``path`` is dotted (``events.0.attrs.x``); ``max_depth`` counts containers, the
    outermost being depth 1.
    """
    return _walk(value, path, 0, max_depth, int_range)


def _walk(value: Any, path: str, depth: int, max_depth: int,
          int_range: tuple[int, int]) -> tuple[str, str] | None:
    kind = type(value)
    if kind is str:
        return (path, "is not valid Unicode (lone surrogate)") if bad_text(value) else None
    if kind is int:
        low, high = int_range
        if low <= value <= high:
            return None
        return path, f"integer out of range ({low}..{high})"
    if kind is float:
        return None if math.isfinite(value) else (path, "NaN and Infinity are not allowed")
    if value is None or kind is bool:
        return None
    if kind is NonFinite:
        return path, f"{value.text} is not allowed (numbers must be finite)"
    if kind is dict or kind is list:
        if depth + 1 > max_depth:
            return path, f"nests deeper than {max_depth} levels"
        return _walk_container(value, path, depth + 1, max_depth, int_range)
    return path, f"{kind.__name__} is not a JSON value"


def _walk_container(value: Any, path: str, depth: int, max_depth: int,
                    int_range: tuple[int, int]) -> tuple[str, str] | None:
    items: Any
    if type(value) is dict:
        for key in value:
            if type(key) is not str:
                return path, f"object key {key!r} is not a string"
            if bad_text(key):
                return path, "an object key is not valid Unicode (lone surrogate)"
        items = value.items()
    else:
        items = enumerate(value)
    for key, item in items:
        found = _walk(item, f"{path}.{key}" if path else str(key), depth, max_depth, int_range)
        if found is not None:
            return found
    return None


def printable(text: str) -> str:
    """``text`` with lone surrogates escaped, safe to store and to put in an error."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if bad_text(text) else text

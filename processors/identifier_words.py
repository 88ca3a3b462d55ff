"""Identifiers in words: ``MAX_RETRY_COUNT`` → "max retry count (maximum retry count)".

A setting, constant or file named in code is searched by the words it is made of, so
a question that *describes* it ("what is the maximum number of retries?",
"リトライの最大回数は？") meets the memory holding the identifier. The observer puts
these words into the dense recall text; the lexical channel already splits identifiers
into their parts (:mod:`processors.lexical`) and expands the common abbreviations
below on the query side. Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Abbreviations common in identifiers and the word they stand for (both directions are
#: used on the query side; the dense text gets the spelled-out form beside the words).
ABBREVIATIONS: dict[str, str] = {
    "max": "maximum", "min": "minimum", "cnt": "count", "num": "number", "db": "database",
    "cfg": "config", "conf": "config", "auth": "authentication", "env": "environment",
    "msg": "message", "err": "error", "req": "request", "resp": "response", "res": "response",
    "tmp": "temporary", "idx": "index", "pwd": "password", "usr": "user", "addr": "address",
    "ttl": "lifetime", "ms": "milliseconds", "sec": "seconds", "secs": "seconds",
    "dir": "directory", "repo": "repository", "init": "initial", "len": "length",
    "qty": "quantity", "attempts": "retries", "rps": "requests per second",
}
#: Kinds of :func:`processors.hints.extract_typed_values` that name something.
NAME_KINDS = frozenset({"identifier", "env_name", "path", "file", "nodeid"})
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SPLIT = re.compile(r"[_\-./:\s]+")
_EXT = re.compile(r"\.[A-Za-z0-9]{1,5}$")
_GENERIC = frozenset({"src", "lib", "index", "main", "test", "tests", "spec", "ts", "py", "js"})
#: At most this many identifiers per memory are spelled out (the dense text stays short).
MAX_WORDS = 24


def words(identifier: str) -> list[str]:
    """The lowercase words of one identifier; a path gives its file stem's words."""
    text = identifier.strip()
    if "::" in text:  # a test node id: its test's name
        text = text.rsplit("::", 1)[-1].split("[", 1)[0]
    elif "/" in text or _EXT.search(text):
        text = _EXT.sub("", text.rstrip("/").rsplit("/", 1)[-1])
    out: list[str] = []
    for part in _SPLIT.split(text):
        out.extend(p.lower() for p in _CAMEL.findall(part) if p)
    return [w for w in out if w not in _GENERIC or len(out) == 1]


def spelled(identifier: str) -> str | None:
    """``"max retry count (maximum retry count)"`` — None for one-word identifiers."""
    parts = words(identifier)
    if sum(len(p) > 1 and p.isalpha() for p in parts) < 2:
        return None
    plain = " ".join(parts)
    full = " ".join(ABBREVIATIONS.get(p, p) for p in parts)
    return plain if full == plain else f"{plain} ({full})"


def identifier_words(typed: Iterable[tuple[str, str]]) -> list[str]:
    """The spelled-out words of every named thing among ``(kind, value)`` pairs, deduplicated."""
    out: dict[str, None] = {}
    for kind, value in typed:
        if kind not in NAME_KINDS:
            continue
        said = spelled(value)
        if said is not None:
            out.setdefault(said)
        if len(out) >= MAX_WORDS:
            break
    return list(out)

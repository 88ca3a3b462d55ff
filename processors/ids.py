"""Deterministic ids: the same input always gives the same UUID (Qdrant point ids).

Replaying the events rebuilds the same memories, chunks and points, so upserts
overwrite instead of duplicating. Each id is a UUID5 over a fixed namespace and the
JSON encoding of a tagged list of its parts, which is injective (no separator in an
id can make two different inputs collide).
"""

from __future__ import annotations

import hashlib
import json
import uuid

#: Fixed namespace of every Breadcrumb id. Changing it changes every id: don't.
BREADCRUMB_NAMESPACE = uuid.UUID("6f1d3c2e-8b4a-5e71-9c0d-2a7b4e9f1c35")


_NAMESPACE_SHA1 = hashlib.sha1(BREADCRUMB_NAMESPACE.bytes)
# The string escaping ``json.dumps(..., ensure_ascii=False)`` applies (its C version).
_QUOTE = json.encoder.encode_basestring


def _json_list(parts: tuple[str | int, ...]) -> str:
    """``json.dumps(list(parts), ensure_ascii=False)`` for str and int parts, without
    building an encoder per call."""
    return "[" + ", ".join(_QUOTE(p) if isinstance(p, str) else str(int(p)) for p in parts) + "]"


def _uuid5(*parts: str | int) -> str:
    """``str(uuid.uuid5(BREADCRUMB_NAMESPACE, json.dumps(parts)))``."""
    return _uuid5_of(_json_list(parts))


#: The RFC 4122 variant digit of a SHA-1 hex digit (its top two bits set to 10).
_VARIANT = {d: "89ab"[int(d, 16) & 3] for d in "0123456789abcdef"}


def _uuid5_of(name: str) -> str:
    """``str(uuid.uuid5(BREADCRUMB_NAMESPACE, name))``, without building a UUID object:
    SHA-1 of namespace + name, its hex digits with version 5 and the variant set."""
    sha = _NAMESPACE_SHA1.copy()
    sha.update(name.encode("utf-8"))
    h = sha.hexdigest()
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


def memory_id(user_id: str, thread_id: str, start_index: int, end_index: int) -> str:
    """Id of the memory (observation) made from one source range of a thread."""
    return _uuid5("memory", user_id, thread_id, int(start_index), int(end_index))


def chunk_id(memory_id: str, event_id: str, char_start: int) -> str:
    """Id of the chunk of ``event_id`` starting at ``char_start``, inside one memory."""
    # _uuid5("chunk", memory_id, event_id, int(char_start)), its JSON written out: one
    # chunk id per chunk of every memory
    return _uuid5_of(f'["chunk", {_QUOTE(memory_id)}, {_QUOTE(event_id)}, {int(char_start)}]')


def event_point_id(user_id: str, event_id: str) -> str:
    """Point id of one raw event (event ids are unique per user)."""
    return _uuid5("event", user_id, event_id)

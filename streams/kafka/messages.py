"""What a consumed Kafka message is, decoded once for every cluster driver.

:func:`decode` turns a message's raw key and value into an ingest item: its thread
key, its JSON value, the payload its dead letter would keep and, when it cannot be
handled under its key,
why (poison: undecodable bytes, a tombstone, a flush marker without its thread, an
event under another thread's key). The single-message path and the batch path of the
Faust agent both start here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from breadcrumb.processors.validate import Rejection
from breadcrumb.streams.ingest_core import Item, decode_entry, entry_item
from breadcrumb.topics.records import Event, FlushMarker, letter_payload, thread_key


@dataclass(frozen=True, slots=True)
class Message:
    """One consumed Kafka message: raw key and value and where it sits."""

    key: bytes | None
    value: bytes | None
    position: str  # topic/partition/offset (also its dead letter's key)
    direct: bool = False  # published straight to Kafka (header breadcrumb-direct)
    accepted: float | None = None  # the message's Kafka timestamp, epoch s (freshness)


def decode(message: Message) -> Item:
    """The message as an ingest :class:`~breadcrumb.streams.ingest_core.Item`: its thread
    key, JSON value, the text its dead letter keeps and why it is poison (None: it is
    not)."""
    key = message.key.decode("utf-8", "replace") if message.key else ""
    value = message.value
    if value is None:
        return _item(message, key, None, "", "tombstone (a message without a value)")
    text = letter_payload(value)
    try:
        entry = orjson.loads(value)
    except orjson.JSONDecodeError:
        return _item(message, key, None, text, "value is not JSON")
    decoded = decode_entry(entry)  # the one contract check of this message
    return _item(message, key, entry, text, poison_reason(key, entry, decoded), decoded)


def _item(message: Message, key: str, entry: Any, text: str, poison: str | None,
          decoded: Event | Rejection | None = None) -> Item:
    return entry_item(message.position, entry, text, poison, decoded,
                      direct=message.direct, accepted=message.accepted, key=key)


def poison_reason(key: str, entry: Any, decoded: Event | Rejection | None
                  ) -> str | None:
    """Why a decoded message cannot be handled under its key (None: it can); ``decoded``:
    the message's :func:`~breadcrumb.streams.ingest_core.decode_entry`."""
    if not isinstance(entry, dict):
        return None  # the schema validation rejects it with its own reason
    user_id, thread_id = entry.get("user_id"), entry.get("thread_id")
    flush = FlushMarker.is_flush(entry)
    if flush and (not isinstance(user_id, str) or not user_id or not isinstance(thread_id, str)):
        return "flush marker without user_id / thread_id"
    own = thread_key(str(user_id), str(thread_id))
    if own == key:
        return None
    if isinstance(decoded, Rejection):
        return None  # an invalid event: it is rejected naming the field
    return f"message of thread {own!r} under key {key!r} (state is kept per key)"

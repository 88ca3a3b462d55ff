"""The pure parts of the event-log rewrite (issue 26, cluster mode): which records of a
partition an erasure covers, and whether the copies kept every thread's order.

A forget deletes rows, points and archives; the log rewrite (``streams.kafka.log_rewrite``)
then removes the erased events' bytes from ``agent-events`` and ``agent-events-dlq`` by
appending every surviving record again and moving the partition's log start past the
originals. Here: what a record is asked against the tombstones (:func:`record_scopes`,
the same ``(user_id, thread_id, event_id, ts)`` the processors check), and the per-key
order check (:func:`order_violations`) with the records a new round copies too when it fails
(:func:`arrivals`).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from breadcrumb.topics.records import BASE64_PREFIX, FlushMarker, split_thread_key

#: What the tombstones are asked about: (user_id, thread_id, event_id, ts).
Scope = tuple[str, str, str, str]
#: What a topic holds: events (``agent-events``), dead letters (``agent-events-dlq``) or
#: memories published downstream (``observations``, keyed by memory id).
EVENTS, DEAD_LETTERS, OBSERVATIONS = "events", "dead_letters", "observations"


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record of a partition as read, and as its copy is produced again."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def _json(value: bytes | str | None) -> Any:
    if value is None:
        return None
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return None


def _entry_scope(entry: Any, fallback_ts: str) -> Scope | None:
    """An event's or a flush marker's scope (its own ts; the record's time without one)."""
    if not isinstance(entry, dict):
        return None
    user, thread = entry.get("user_id"), entry.get("thread_id")
    if not isinstance(user, str) or not isinstance(thread, str):
        return None
    event_id, ts = entry.get("event_id"), entry.get("ts")
    return (user, thread, event_id if isinstance(event_id, str) else "",
            ts if isinstance(ts, str) else fallback_ts)


def _letter_entry(letter: dict[str, Any]) -> Any:
    """The event a dead letter keeps (its payload: JSON text or ``base64:`` bytes)."""
    payload = letter.get("payload")
    if not isinstance(payload, str):
        return None
    if payload.startswith(BASE64_PREFIX):
        try:
            return _json(base64.b64decode(payload[len(BASE64_PREFIX):], validate=True))
        except ValueError:
            return None
    return _json(payload)


def record_scopes(record: LogRecord, kind: str = EVENTS) -> list[Scope]:
    """Every scope ``record`` belongs to; the record is erased when any one is.

    ``agent-events``: the value's event or flush marker, and the key's thread
    (``{user_id}/{thread_id}``, dated by the record's timestamp), so a value that is not
    JSON under an erased thread's key is erased too. ``agent-events-dlq``: the event in
    the dead letter's payload, and the letter's own user / event id. ``observations``: the
    memory's tenant and source thread, dated by the record (a forgotten memory's own
    record is not found this way: tombstones keep event ids, not memory ids)."""
    when = _iso(record.timestamp_ms)
    out: list[Scope] = []
    value = _json(record.value)
    if kind == OBSERVATIONS:
        source = value.get("source_range") if isinstance(value, dict) else None
        if isinstance(value, dict) and isinstance(value.get("user_id"), str):
            thread = source.get("thread_id") if isinstance(source, dict) else None
            out.append((value["user_id"], thread if isinstance(thread, str) else "", "", when))
        return out
    if kind == DEAD_LETTERS:
        if isinstance(value, dict):
            found = _entry_scope(_letter_entry(value), str(value.get("received_at") or when))
            if found is not None:
                out.append(found)
            user, event_id = value.get("user_id"), value.get("event_id")
            if isinstance(user, str) and user:
                out.append((user, "", event_id if isinstance(event_id, str) else "",
                            str(value.get("received_at") or when)))
        return out
    found = _entry_scope(value, when)
    if found is not None:
        out.append(found)
    if record.key:
        text = record.key.decode("utf-8", "replace")
        if "/" in text:
            user, thread = split_thread_key(text)
            out.append((user, thread, "", found[3] if found is not None else when))
    return out


def survivors(records: Sequence[LogRecord], gone: set[int], kind: str = EVENTS
              ) -> list[LogRecord]:
    """The records of ``records`` a rewrite copies: not erased (``gone``: their indexes)
    and, on ``agent-events``, no flush marker. Every worker reads on past the fence, so a
    marker's copy would close whatever window its thread has open *now*, cutting a range
    the original log never cut; a worker that had not yet read the original closes that
    window at its idle timeout instead (nothing is lost, the range ends later)."""
    return [r for i, r in enumerate(records)
            if i not in gone and not (kind == EVENTS and is_flush_marker(r))]


def is_flush_marker(record: LogRecord) -> bool:
    """Whether ``record`` is a flush marker (a keyed control message, not an event)."""
    value = _json(record.value)
    return isinstance(value, dict) and FlushMarker.is_flush(value)


def erased_indexes(scopes: Sequence[Sequence[Scope]], erased: set[int]) -> set[int]:
    """Indexes of the records (``scopes[i]``: record i's scopes) of which some scope is at
    a position in ``erased`` (the positions in the flattened list of every scope)."""
    out: set[int] = set()
    at = 0
    for i, own in enumerate(scopes):
        if any(at + j in erased for j in range(len(own))):
            out.add(i)
        at += len(own)
    return out


def order_violations(tail: Sequence[LogRecord], copies: set[int]) -> list[bytes]:
    """Keys of which a record that is not a copy (a live producer's new event, landed
    while the copies were appended) precedes one of that key's copies in ``tail`` (the
    records after the fence, in offset order; ``copies``: the copies' offsets). A thread
    is read in offset order by replays and workers: such a key's new event would come
    before its older ones. Records without a key have no order to keep."""
    foreign_seen: set[bytes] = set()
    bad: list[bytes] = []
    for rec in tail:
        if rec.key is None:
            continue
        if rec.offset not in copies:
            foreign_seen.add(rec.key)
        elif rec.key in foreign_seen and rec.key not in bad:
            bad.append(rec.key)
    return bad


def arrivals(tail: Sequence[LogRecord], copies: set[int]) -> list[LogRecord]:
    """The records of ``tail`` that are not copies (they arrived among them), in order.
    When the order check fails, a new round copies the survivors again followed by these
    (the erased ones among them left out): every key's records in the log's order."""
    return [rec for rec in tail if rec.offset not in copies]

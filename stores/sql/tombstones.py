"""Tombstones of erasures (issue 26): written by a forget, read by intake and by the
processors so no re-import, redelivery or replay brings an erased scope back.

``erasure_tombstones`` holds a forgotten tenant (with the time of the erasure) or thread;
``erased_events`` the event ids of a forgotten memory's source range. Thread and event ids
are kept as SHA-256 hashes (with the tenant id), never in clear. In MySQL both tables live
in the control database every generation's processors read (``stores.sql.forget.SHARED``).
Reads are cached per store for :data:`TOMBSTONE_TTL_S`; a read never runs DDL.
"""

from __future__ import annotations

import hashlib
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from breadcrumb.stores.sql.forget import Plan, _has_table, _in, _t_name, _text, ensure_tables

TOMBSTONE_TTL_S = 2.0  # other processes' tombstones are seen within this (cluster)


def write_tombstone(store: Any, p: Plan, at: str, actor: str) -> None:
    """Record that the scope is erased (before deleting: intake refuses it from now on)."""
    ensure_tables(store)
    scope = p.scope
    with store.transaction():
        if scope.kind == "memory":
            sql = store.dialect.upsert(_t_name(store, "erased_events"), ("user_id", "event_hash"),
                                       ("user_id", "event_hash"), ("event_hash",))
            if p.event_ids:
                store._execute_many(sql, [(scope.user_id, digest(scope.user_id, e))
                                          for e in p.event_ids])
        else:
            thread = None if scope.thread_id is None else digest(scope.user_id, scope.thread_id)
            store._execute(f"INSERT INTO {_t_name(store, 'erasure_tombstones')} (user_id, "
                           "scope, thread_hash, erased_at, actor) VALUES (?, ?, ?, ?, ?)",
                           (scope.user_id, scope.kind, thread, at, actor))
    _cache.pop(store, None)


@dataclass(slots=True)
class _Tombstones:
    read_at: float
    tenants: dict[str, datetime]  # user -> erased at
    threads: set[tuple[str, str]]
    event_users: set[str]  # users with erased event ids (checked by id)


_cache: weakref.WeakKeyDictionary[Any, _Tombstones] = weakref.WeakKeyDictionary()


def _tombstones(store: Any) -> _Tombstones:
    found = _cache.get(store)
    now = time.monotonic()
    if found is not None and now - found.read_at < TOMBSTONE_TTL_S:
        return found
    if not _has_table(store, "erasure_tombstones", shared=True):  # a read path: no DDL here (MySQL
        found = _Tombstones(now, {}, set(), set())  # would commit the caller's transaction)
        _cache[store] = found
        return found
    tenants: dict[str, datetime] = {}
    threads: set[tuple[str, str]] = set()
    for user, scope, thread, at in store._read(
            f"SELECT user_id, scope, thread_hash, erased_at FROM "
            f"{_t_name(store, 'erasure_tombstones')}"):
        if scope == "tenant":
            when = _when(str(at)) or datetime.max.replace(tzinfo=UTC)
            tenants[_text(user)] = max(when, tenants.get(_text(user), when))
        else:
            threads.add((_text(user), _text(thread)))
    users = {_text(r[0]) for r in store._read(
        f"SELECT DISTINCT user_id FROM {_t_name(store, 'erased_events')}")}
    found = _Tombstones(now, tenants, threads, users)
    _cache[store] = found
    return found


def digest(user_id: str, value: str) -> str:
    """What a tombstone keeps of a thread or event id: a hash, so the tombstone names no
    thread or event (a re-import computes the same hash and is refused)."""
    return hashlib.sha256(f"{user_id}\0{value}".encode()).hexdigest()[:40]


def _when(ts: str) -> datetime | None:
    try:
        value = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def erased_positions(store: Any, events: Sequence[tuple[str, str, str, str]]) -> set[int]:
    """Positions of the (user_id, thread_id, event_id, ts) that an erasure covers: a
    forgotten thread, an event id of a forgotten memory, or a forgotten tenant's event
    dated at or before the erasure (a re-import of old data; newer events start afresh)."""
    if not events:
        return set()
    marks = _tombstones(store)
    if not (marks.tenants or marks.threads or marks.event_users):
        return set()
    out: set[int] = set()
    by_user: dict[str, list[int]] = {}
    for i, (user, thread, _event_id, ts) in enumerate(events):
        if (user, digest(user, thread)) in marks.threads:
            out.add(i)
        elif user in marks.tenants and ((_when(ts) or datetime.min.replace(tzinfo=UTC))
                                        <= marks.tenants[user]):
            out.add(i)
        elif user in marks.event_users:
            by_user.setdefault(user, []).append(i)
    for user, positions in by_user.items():
        ids = [digest(user, events[i][2]) for i in positions]
        gone = {_text(r[0]) for r in store._read(
            f"SELECT event_hash FROM {_t_name(store, 'erased_events')} WHERE user_id = ? AND "
            f"{_in('event_hash', ids)}", (user, *ids))}
        out.update(i for i, h in zip(positions, ids, strict=True) if h in gone)
    return out


def is_erased(store: Any, user_id: str, thread_id: str, event_id: str, ts: str) -> bool:
    """One event: :func:`erased_positions` of a single item."""
    return bool(erased_positions(store, [(user_id, thread_id, event_id, ts)]))

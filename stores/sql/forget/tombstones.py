"""Tombstones of erasures (issue 26): written by a forget, read by intake and by the
processors so no re-import, redelivery or replay brings an erased scope back.

``erasure_tombstones`` holds a forgotten tenant (with the time of the erasure) or thread;
``erased_events`` the event ids of a forgotten memory's source range. Thread and event ids
are kept as SHA-256 hashes (with the tenant id), never in clear. In MySQL both tables live
in the control database every generation's processors read (``stores.sql.forget.erasure.SHARED``).
Reads are cached per store for :data:`TOMBSTONE_TTL_S`; a read never runs DDL.
:class:`SqlTombstones` is the ``tombstones`` a SQL store hands out
(``stores.ports.tables.Tombstones``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from breadcrumb.stores.sql import schema as s
from breadcrumb.stores.sql.core import id_text
from breadcrumb.stores.sql.forget.erasure import Plan, SqlErasure

TOMBSTONE_TTL_S = 2.0  # other processes' tombstones are seen within this (cluster)


@dataclass(slots=True)
class _Tombstones:
    read_at: float
    tenants: dict[str, datetime]  # user -> erased at
    threads: set[tuple[str, str]]
    event_users: set[str]  # users with erased event ids (checked by id)


class SqlTombstones:
    """The erasure tombstones of one SQL store, in the tables its :class:`SqlErasure`
    creates (MySQL: the control database's)."""

    def __init__(self, erasure: SqlErasure) -> None:
        self.erasure = erasure
        self.db = erasure.db
        self._cache: _Tombstones | None = None

    def write(self, p: Plan, at: str, actor: str) -> None:
        """Record that the scope is erased (before deleting: intake refuses it from now
        on)."""
        self.erasure.ensure_tables()
        scope = p.scope
        with self.db.transaction():
            if scope.kind == "memory":
                sql = self.db.dialect.upsert(self.erasure.table("erased_events"),
                                             ("user_id", "event_hash"),
                                             ("user_id", "event_hash"), ("event_hash",))
                if p.event_ids:
                    self.db.execute_many(sql, [(scope.user_id, digest(scope.user_id, e))
                                               for e in p.event_ids])
            else:
                thread = (None if scope.thread_id is None
                          else digest(scope.user_id, scope.thread_id))
                self.db.execute(f"INSERT INTO {self.erasure.table('erasure_tombstones')} "
                                "(user_id, scope, thread_hash, erased_at, actor) "
                                "VALUES (?, ?, ?, ?, ?)",
                                (scope.user_id, scope.kind, thread, at, actor))
        self._cache = None

    def _read(self) -> _Tombstones:
        found = self._cache
        now = time.monotonic()
        if found is not None and now - found.read_at < TOMBSTONE_TTL_S:
            return found
        # a read path: no DDL here (MySQL would commit the caller's transaction)
        if not self.erasure.has_table("erasure_tombstones", shared=True):
            found = _Tombstones(now, {}, set(), set())
            self._cache = found
            return found
        tenants: dict[str, datetime] = {}
        threads: set[tuple[str, str]] = set()
        for user, scope, thread, at in self.db.read(
                f"SELECT user_id, scope, thread_hash, erased_at FROM "
                f"{self.erasure.table('erasure_tombstones')}"):
            if scope == "tenant":
                when = _when(str(at)) or datetime.max.replace(tzinfo=UTC)
                tenants[id_text(user)] = max(when, tenants.get(id_text(user), when))
            else:
                threads.add((id_text(user), id_text(thread)))
        users = {id_text(r[0]) for r in self.db.read(
            f"SELECT DISTINCT user_id FROM {self.erasure.table('erased_events')}")}
        found = _Tombstones(now, tenants, threads, users)
        self._cache = found
        return found

    def erased_positions(self, events: Sequence[tuple[str, str, str, str]]) -> set[int]:
        """Positions of the (user_id, thread_id, event_id, ts) that an erasure covers: a
        forgotten thread, an event id of a forgotten memory, or a forgotten tenant's event
        dated at or before the erasure (a re-import of old data; newer events start
        afresh)."""
        if not events:
            return set()
        marks = self._read()
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
            gone = {id_text(r[0]) for r in self.db.read(
                f"SELECT event_hash FROM {self.erasure.table('erased_events')} WHERE "
                f"user_id = ? AND event_hash IN ({s.marks(len(ids))})", (user, *ids))}
            out.update(i for i, h in zip(positions, ids, strict=True) if h in gone)
        return out

    def is_erased(self, user_id: str, thread_id: str, event_id: str, ts: str) -> bool:
        """One event: :meth:`erased_positions` of a single item."""
        return bool(self.erased_positions([(user_id, thread_id, event_id, ts)]))


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

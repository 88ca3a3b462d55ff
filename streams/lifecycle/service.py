"""The LifecycleService: supersession on ingest, the tier sweeper, manual changes, replay.

Every status or tier change is a :class:`MemoryStatusChange` (tombstone = ``None``) that is
applied idempotently to the SQL row, the Qdrant payload and the audit trail, then
published to the changelog: the compacted ``memory-status`` topic in cluster mode, the
``memory_changelog`` table embedded. Replaying the changelog in order into stores holding
the same memories reproduces every status and tier (:meth:`LifecycleService.replay`).
Decisions live in ``processors.supersession`` / ``processors.lifecycle``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from breadcrumb.processors import lifecycle as lc
from breadcrumb.processors import supersession as sp
from breadcrumb.stores.cold.archive import Archiver
from breadcrumb.stores.ports import ChunkTextPayloads, RawEventStore, VectorIndex
from breadcrumb.stores.ports.tables import Store
from breadcrumb.stores.sql.facts_batch import STATUS_COLUMNS
from breadcrumb.stores.sql.lifecycle import LifecycleTables
from breadcrumb.streams.lifecycle.batch import BatchScope
from breadcrumb.streams.lifecycle.changelog import (
    ChangelogPublisher,
    CollectingChangelog,
    ConfigFor,
    SqlChangelog,
    lifecycle_configs,
)
from breadcrumb.topics.records import Event, MemoryStatusChange, Observation

__all__ = ["ChangelogPublisher", "CollectingChangelog", "LifecycleService", "SqlChangelog",
           "lifecycle_configs"]
log = logging.getLogger(__name__)


class LifecycleService(BatchScope):
    """Owns memory status and tier after creation.

    Why so many methods: it is the one owner of a memory's status and tier (issue 5):
    supersession on ingest, the tier sweeper, manual changes, tombstones and changelog
    replay all apply a change through the same private steps (SQL row, vector payload,
    audit, evidence, changelog), so they stay together; each method is short. How those
    steps read and write, directly or through a derivation batch: :class:`BatchScope`.
    """

    def __init__(self, store: Store, tables: LifecycleTables, index: VectorIndex,
                 raw: RawEventStore,
                 publisher: ChangelogPublisher, clock: Callable[[], datetime],
                 configs: ConfigFor | None = None, archiver: Archiver | None = None) -> None:
        super().__init__(store, tables, index, raw)
        self.publisher = publisher
        self.clock = clock
        self.configs: ConfigFor = configs or (lambda _p: lc.LifecycleConfig())
        self.archiver = archiver

    # ------------------------------------------------------------------ ingest hook
    def on_observation(self, obs: Observation) -> None:
        """Index the new memory's facts, then supersede / conflict / verify / dedupe."""
        rng = obs.source_range
        events = self._events(obs.user_id, rng.thread_id, rng.start_index, rng.end_index)
        ts = {e.event_id: e.ts for e in events}
        rows = [sp.FactRow(obs.id, f.key, f.value, ts.get(f.event_id, obs.created_at))
                for f in obs.facts]
        reads = self._reads()
        held = self._tables().facts.replace_facts(obs.user_id, obs.id, rows,
                                            reads.fact_keys(obs.id) if reads else None)
        if reads is not None:
            reads.replaced_facts(obs.id, held)
        # TTLs and windows run on the wall clock from when the memory was stored, not from
        # the events' own times (an imported 2024 history must not be "unused 7 d" at once)
        stored_at = self.clock().isoformat()
        self._tables().lives.ensure_life(obs.user_id, obs.id, stored_at)
        existing = self._tables().facts.current_facts(obs.user_id, sorted({f.key for f in rows}))
        # a fact key is a setting of one project (sp.of_project)
        projects = {m: row.get("project_id") for m in {f.memory_id for f in existing} - {obs.id}
                    if (row := self._row(obs.user_id, m)) is not None}
        rivals = sp.of_project(existing, obs.id, obs.project_id, projects)
        verdicts = sp.compare_facts(rows, rivals)
        if rows and sp.is_reversal(e.content for e in events if e.kind == "message"):
            newest = max(r.ts for r in rows)
            verdicts += sp.reversal_verdicts(obs.id, newest, [r.key for r in rows], rivals)
        for verdict in verdicts:
            self._apply_verdict(obs.user_id, verdict, stored_at)
        self._verify(obs, rows, existing, events)
        self._dedupe(obs, rows, existing)
        self._snapshot(obs.user_id, obs.id)

    def _apply_verdict(self, user_id: str, v: sp.Verdict, at: str) -> None:
        if v.kind == sp.CONFLICTED:
            for mid in (v.older, v.newer):
                self._set(user_id, mid, "pipeline", f"conflict:{v.key}", at, status="conflicted")
            return
        self._tables().facts.mark_fact(v.older, v.key, "superseded")
        older = self._row(user_id, v.older)
        for dup in (older["metadata"].get("merged_ranges", {}) if older else {}):
            self._tables().facts.mark_fact(dup, v.key, "superseded")  # its duplicates held it too
        states = self._tables().facts.fact_states_of(v.older)  # (key, state): held and lost at once
        lost = [key for key, state in states if state == "superseded"]
        if sp.memory_outcome([key for key, state in states if state in ("current",
                                                                          "superseded")],
                             lost) == sp.SUPERSEDED:
            reason = f"supersede:{v.key}"
            self._set(user_id, v.older, "pipeline", reason, at, status="superseded",
                      superseded_by=v.newer)
            self._set(user_id, v.newer, "pipeline", reason, at, supersedes=v.older)
        self._note(user_id, v.older, "superseded_facts", v.key,
                   {"value": v.old_value, "new_value": v.new_value, "superseded_by": v.newer})
        self._note(user_id, v.newer, "supersedes_facts", v.key,
                   {"value": v.old_value, "memory_id": v.older})
        self._audit(v.older, user_id, at, "pipeline", f"fact:{v.key}", v.old_value,
                    v.new_value, f"superseded by {v.newer}")

    def _note(self, user_id: str, mid: str, name: str, key: str, value: Any) -> None:
        row = self._row(user_id, mid)
        if row is None:
            return
        meta = dict(row["metadata"])
        meta[name] = {**meta.get(name, {}), key: value}
        self._tables().lives.set_metadata(user_id, mid, meta)
        self._changed(user_id, mid, {"metadata": meta})

    def _verify(self, obs: Observation, rows: list[sp.FactRow],
                existing: list[sp.FactRow], events: list[Event]) -> None:
        checks = [e for e in events if sp.is_verification(e.kind, e.content,
                                                          e.attrs.get("exit_code"))]
        if not checks or not rows:
            return
        last_fact = max(f.event_index for f in obs.facts)
        targets = {f.memory_id for f in existing if (f.key, f.value) in
                   {(r.key, r.value) for r in rows}} - {obs.id}
        if any(e.index is not None and e.index > last_fact for e in checks):
            targets.add(obs.id)
        for mid in sorted(targets):
            life = self._tables().lives.get_life(obs.user_id, mid)
            step = lc.verify(life, checks[-1].kind) if life else None
            if step is not None:
                self._set(obs.user_id, mid, "pipeline", step.reason,
                          self.clock().isoformat(), tier=step.tier)

    def _dedupe(self, obs: Observation, rows: list[sp.FactRow],
                existing: list[sp.FactRow]) -> None:
        """A memory with the same current facts and a near-equal summary is a duplicate,
        and so is a replica: the same facts said at the same times (one session imported
        twice, a forked thread), in whatever state they are now, so that which replica
        came first does not change the outcome. Of a group the first by (created_at, id)
        is kept; the others are superseded by it."""
        mine = {(r.key, r.value) for r in rows}
        said = {(r.key, r.value, r.ts) for r in rows}
        current: dict[str, set[tuple[str, str]]] = {}
        for f in existing:
            current.setdefault(f.memory_id, set()).add((f.key, f.value))
        anyhow: dict[str, set[tuple[str, str, str]]] = {}
        for f in self._tables().facts.facts_in_any_state(obs.user_id, sorted({k for k, _ in mine})):
            anyhow.setdefault(f.memory_id, set()).add((f.key, f.value, f.ts))
        candidates = {m for m, fs in current.items() if fs == mine}
        candidates |= {m for m, fs in anyhow.items() if fs == said}
        group = [obs]
        others = sorted(candidates - {obs.id})
        reads = self._reads()
        found = (reads.memories(obs.user_id, others) if reads is not None else
                 {o.id: o for o in self.store.memories.get_memories(obs.user_id, others)})
        for mid in others:
            other = found.get(mid)
            if other is not None and sp.near_duplicate(
                    obs.summary, other.summary, mine, {(f.key, f.value) for f in other.facts}):
                group.append(other)
        keep = min(group, key=lambda m: (m.created_at, m.id))
        for drop in sorted(group, key=lambda m: m.id):
            row = self._row(obs.user_id, drop.id) if drop.id != keep.id else None
            if row is None or row.get("superseded_by") == keep.id:
                continue
            self._set(obs.user_id, drop.id, "pipeline", f"duplicate of {keep.id}",
                      self.clock().isoformat(), status="superseded", superseded_by=keep.id)
            self._note(obs.user_id, keep.id, "merged_ranges", drop.id,
                       drop.source_range.to_dict())

    def _snapshot(self, user_id: str, mid: str) -> None:
        """Publish the new memory's current state last, so the compacted topic's latest
        value for it is right even after the pipeline's ``created`` record."""
        row = self._row(user_id, mid)
        if row is not None:
            self.publisher.publish(mid, user_id, _change(row, row["created_at"], "pipeline",
                                                         "created").to_dict())

    # ------------------------------------------------------------------ changes
    def _set(self, user_id: str, mid: str, actor: str, reason: str, at: str,
             status: str | None = None, tier: str | None = None,
             superseded_by: str | None = None, supersedes: str | None = None) -> bool:
        row = self._row(user_id, mid)
        if row is None:
            self.errors["missing_memory"] += 1
            return False
        change = _change(row, at, actor, reason, status, tier)
        links = {"superseded_by": superseded_by, "supersedes_memory_id": supersedes}
        return self.emit(replace(change, **{k: v for k, v in links.items() if v is not None}))

    def emit(self, change: MemoryStatusChange) -> bool:
        """Apply a change, then publish it (when it changed anything)."""
        changed = self._apply_change(change.memory_id, change)
        if changed:
            self.publisher.publish(change.memory_id, change.user_id, change.to_dict())
        return changed

    def delete(self, user_id: str, mid: str, at: str, actor: str, reason: str) -> bool:
        """Delete a memory with a tombstone (audit kept)."""
        row = self._row(user_id, mid)
        if row is None:
            return False
        self._audit(mid, user_id, at, actor, "tier", row["tier"], lc.DELETE, reason)
        self.apply(mid, None)
        self.publisher.publish(mid, user_id, None)
        return True

    def apply(self, memory_id: str, value: dict[str, Any] | None) -> bool:
        """Apply one changelog value idempotently; True when something changed."""
        if value is None:
            return self._apply_tombstone(memory_id)
        return self._apply_change(memory_id, MemoryStatusChange(**value))

    def _apply_change(self, memory_id: str, change: MemoryStatusChange) -> bool:
        row = self._row(change.user_id, memory_id)
        if row is None:
            self.errors["missing_memory"] += 1
            return False
        fields = [(f, row[f], getattr(change, f)) for f in ("status", "tier")
                  if row[f] != getattr(change, f)]
        links = (change.superseded_by not in (None, row["superseded_by"])
                 or change.supersedes_memory_id not in (None, row["supersedes_memory_id"]))
        if not fields and not links:
            return False
        values = {  # as apply_status_change's UPDATE leaves them
            "status": change.status, "tier": change.tier, "updated_at": change.at,
            "superseded_by": _coalesce(change.superseded_by, row["superseded_by"]),
            "supersedes_memory_id": _coalesce(change.supersedes_memory_id,
                                              row["supersedes_memory_id"])}
        batched = self._batched()
        if batched is not None:  # a batch: maybe at its end
            batched.apply_status_change(change, [values[c] for c in STATUS_COLUMNS])
        else:
            self.store.memories.apply_status_change(change)
        self._changed(change.user_id, memory_id, values)
        if fields:  # only what changed: a status goes to every chunk point of the memory
            # (``set_memory_payload``), so a tier-only change must not carry it (issue 49:
            # each rewrite left the chunk payloads' old blocks behind on disk)
            self._payload(memory_id, {name: new for name, _, new in fields})
        for name, old, new in fields:
            self._audit(memory_id, change.user_id, change.at, change.actor, name, old, new,
                        change.reason)
        if fields:
            self._tables().lives.set_life(change.user_id, memory_id, change.at,
                                    int(row["hit_count"]), change.at)
        self._move_evidence(change, row["status"])
        return True

    def _apply_tombstone(self, memory_id: str) -> bool:
        user_id = self.tables.lives.owner_of(memory_id)
        if user_id is None:
            return False
        self._forget(user_id, memory_id)
        self._payload(memory_id, {"status": lc.DELETE, "tier": lc.DELETE})
        return bool(self._tables().lives.delete_memory(user_id, memory_id))

    def _move_evidence(self, change: MemoryStatusChange, before: str) -> None:
        if self.archiver is None or (change.status == "archived") == (before == "archived"):
            return
        reads = self._reads()
        if reads is not None:  # its archived ranges and the memory's row change
            reads.forget_archive(change.user_id)
            reads.forget(change.user_id, change.memory_id)
            batched = self._batched()
            if batched is not None:
                batched.flush_memory(change.user_id, change.memory_id)  # read from SQL
        memory = self.store.memories.get_memory(change.user_id, change.memory_id)
        if memory is None:
            return
        if change.status == "archived":
            if isinstance(self.index, ChunkTextPayloads):  # issue 49: the points keep the text
                self.index.keep_chunk_texts(
                    self.store.chunks.get_chunks(memory.user_id, memory.id))
            self.archiver.archive(memory)
        else:
            self.archiver.restore(memory)

    # ------------------------------------------------------------------ manual / sweep
    def set_manual(self, user_id: str, mid: str, actor: str, reason: str,
                   status: str | None = None, tier: str | None = None) -> Observation | None:
        """``PATCH /v1/memories/{id}`` and ``breadcrumb memory set``; None if no memory."""
        if status is not None and status not in lc.STATUSES:
            raise ValueError(f"status must be one of {lc.STATUSES}")
        if tier is not None and tier not in lc.TIERS:
            raise ValueError(f"tier must be one of {lc.TIERS}")
        if self.store.memories.get_memory_row(user_id, mid) is None:
            return None
        self._set(user_id, mid, actor, reason, self.clock().isoformat(), status=status, tier=tier)
        memory: Observation | None = self.store.memories.get_memory(user_id, mid)
        return memory

    def sweep(self, now: datetime | None = None) -> Counter[str]:
        """One pass over every memory: archive, delete, demote, promote, roll hit windows."""
        now = now or self.clock()
        done: Counter[str] = Counter()
        for life in list(self.tables.lives.iter_lives()):
            cfg = self.configs(life.project_id)
            step = lc.decide(life, now, cfg)
            if step is None:
                window = lc.roll_window(life, now, cfg)
                if window is not None:
                    self.tables.lives.set_window(life.memory_id, window.hits_base,
                                                 window.window_start)
                continue
            self._transition(step, now.isoformat())
            done[step.reason.split(":")[0]] += 1
        return done

    def _transition(self, step: lc.Transition, at: str) -> None:
        if step.tier == lc.DELETE:
            self.delete(step.user_id, step.memory_id, at, "sweeper", step.reason)
        else:
            self._set(step.user_id, step.memory_id, "sweeper", step.reason, at,
                      status=step.status, tier=step.tier)

    def replay(self, values: Iterable[tuple[str, dict[str, Any] | None]]) -> int:
        """Apply changelog values in order (no publishing); returns how many changed."""
        return sum(self.apply(mid, value) for mid, value in values)

    def history(self, user_id: str, mid: str) -> list[dict[str, Any]]:
        """The memories this one superseded / was superseded by (whole or per fact)."""
        row = self.store.memories.get_memory_row(user_id, mid)
        if row is None:
            return []
        meta = row["metadata"]
        links = [("supersedes", row["supersedes_memory_id"], None),
                 ("superseded_by", row["superseded_by"], None)]
        links += [("superseded_by", v["superseded_by"], k)
                  for k, v in meta.get("superseded_facts", {}).items()]
        links += [("supersedes", v["memory_id"], k)
                  for k, v in meta.get("supersedes_facts", {}).items()]
        links += [("merged", k, None) for k in meta.get("merged_ranges", {})]
        return [_link(self.store.memories.get_memory_row(user_id, other), rel, key)
                for rel, other, key in links if other]


def _coalesce(value: Any, kept: Any) -> Any:
    return kept if value is None else value


def _link(row: dict[str, Any] | None, relation: str, key: str | None) -> dict[str, Any]:
    base = {"relation": relation, "fact_key": key}
    if row is None:
        return {**base, "memory_id": None, "status": "deleted"}
    return {**base, "memory_id": row["id"], "status": row["status"], "tier": row["tier"],
            "summary": row["summary"], "created_at": row["created_at"]}


def _change(row: dict[str, Any], at: str, actor: str, reason: str, status: str | None = None,
            tier: str | None = None) -> MemoryStatusChange:
    return MemoryStatusChange(
        memory_id=row["id"], user_id=row["user_id"], status=status or row["status"],
        tier=tier or row["tier"], at=at, actor=actor, reason=reason,
        supersedes_memory_id=row["supersedes_memory_id"], superseded_by=row["superseded_by"])

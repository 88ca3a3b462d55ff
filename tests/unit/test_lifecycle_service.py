"""LifecycleService on the embedded stores (SQLite + Qdrant Edge + local cold files)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.eval.corpus import REGEX_V1, REGEX_V2, golden_events
from breadcrumb.infra.bootstrap import Runtime, build_runtime
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder


def _runtime(path: Path, **kw: Any) -> Runtime:
    settings = Settings(data_dir=path, embedder="hash", lifecycle_sweep_seconds=3600, **kw)
    return build_runtime(settings, embedder=HashEmbedder())


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Any:
    rt = _runtime(tmp_path_factory.mktemp("golden"))
    rt.gateway.submit(golden_events(), "cli")
    rt.gateway.wait_processed(120)
    yield rt
    rt.stop()


def _holder(rt: Runtime, user: str, key: str, value: str) -> dict[str, Any]:
    for m in rt.memories.list_memories(user, 100):
        if any(f.key == key and f.value == value for f in m.facts):
            row: dict[str, Any] = rt.memories.get_memory_row(user, m.id)
            return row
    raise AssertionError(f"no memory holds {key}={value}")


def test_db_port_change_marks_the_fact_and_keeps_other_facts(golden: Runtime) -> None:
    old = _holder(golden, "u1", "env:DB_PORT", "5432")
    new = _holder(golden, "u1", "env:DB_PORT", "6432")
    # the db-setup memory still holds valid facts (images, SQL): stays active, fact marked
    assert old["status"] == "active"
    marked = old["metadata"]["superseded_facts"]["env:DB_PORT"]
    assert marked == {"value": "5432", "new_value": "6432", "superseded_by": new["id"]}
    assert new["metadata"]["supersedes_facts"]["env:DB_PORT"]["memory_id"] == old["id"]
    audit = golden.audit.list_audit("u1", old["id"])
    assert any(a["field"] == "fact:env:DB_PORT" and a["to_value"] == "6432" for a in audit)
    history = golden.lifecycle.history("u1", old["id"])
    assert {"relation": "superseded_by", "fact_key": "env:DB_PORT"}.items() <= history[0].items()


def test_regex_change_and_tenant_isolation(golden: Runtime) -> None:
    key = "file:src/auth/validate-email.ts#EMAIL_RE"
    old = _holder(golden, "u1", key, REGEX_V1)
    assert old["metadata"]["superseded_facts"][key]["new_value"] == REGEX_V2
    u2 = _holder(golden, "u2", "env:DB_PORT", "5433")
    assert "superseded_facts" not in u2["metadata"] and u2["status"] == "active"


def _regex_set_twice(rt: Runtime, **older_attrs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The golden regex-v2 thread, and five days before it the same thread setting EMAIL_RE
    to ``/^x$/`` (``older_attrs``: more fields of its events); the two holders' rows."""
    events = [e for e in golden_events() if e["thread_id"] in ("auth-email-regex-v2",)
              and e["user_id"] == "u1"]
    older = [dict(e, thread_id="regex-old", event_id="o" + e["event_id"], **older_attrs,
                  ts=e["ts"].replace("2024-05-15", "2024-05-10"),
                  content=e["content"].replace(REGEX_V2, "/^x$/")) for e in events]
    rt.gateway.submit(older + events, "cli")
    rt.gateway.wait_processed(60)
    key = "file:src/auth/validate-email.ts#EMAIL_RE"
    return _holder(rt, "u1", key, "/^x$/"), _holder(rt, "u1", key, REGEX_V2)


def test_whole_memory_superseded_both_links_and_payload(tmp_path: Path) -> None:
    rt = _runtime(tmp_path)
    old, new = _regex_set_twice(rt)
    assert (old["status"], old["superseded_by"]) == ("superseded", new["id"])
    assert new["supersedes_memory_id"] == old["id"]
    hits = rt.index.search_memories(_flt("u1", ("superseded",)), 10, dense=[0.1] * rt.embedder.dim)
    assert [h.id for h in hits] == [old["id"]]
    rt.stop()


def test_a_value_of_another_project_supersedes_nothing(tmp_path: Path) -> None:
    """One tenant, two repositories: each keeps its own current EMAIL_RE (real sessions:
    an aider session's DATABASE_URL was superseded by another project's Codex session)."""
    rt = _runtime(tmp_path)
    old, new = _regex_set_twice(rt, project_id="other")
    assert old["project_id"] == "other" and new["project_id"] != "other"
    assert (old["status"], old["superseded_by"]) == ("active", None)
    assert "superseded_facts" not in old["metadata"]
    assert new["supersedes_memory_id"] is None and "supersedes_facts" not in new["metadata"]
    rt.stop()


def _flt(user: str, statuses: tuple[str, ...]) -> Any:
    from breadcrumb.stores.ports import SearchFilter

    return SearchFilter(user_id=user, statuses=statuses)


def test_walk_tiers_with_an_injected_clock_and_replay(tmp_path: Path) -> None:
    rt = _runtime(tmp_path / "a")
    rt.gateway.submit([e for e in golden_events() if e["thread_id"] == "inventory-cron"], "cli")
    rt.gateway.wait_processed(60)
    [mem] = rt.memories.list_memories("u1", 10)
    life = rt.lifecycle
    t0 = datetime.fromisoformat(mem.created_at.replace("Z", "+00:00"))

    def tier() -> tuple[str, str]:
        row = rt.memories.get_memory_row("u1", mem.id)
        return (row["status"], row["tier"]) if row else ("gone", "gone")

    for i in range(3):
        rt.memories.record_usage("u1", [mem.id], (t0 + timedelta(hours=i + 1)).isoformat())
    life.sweep(t0 + timedelta(hours=4))
    assert tier() == ("active", "confirmed")
    for i in range(10):
        rt.memories.record_usage("u1", [mem.id], (t0 + timedelta(hours=5 + i)).isoformat())
    life.sweep(t0 + timedelta(hours=20))
    assert tier() == ("active", "active")
    life.sweep(t0 + timedelta(days=400))
    assert tier() == ("active", "confirmed")
    life.sweep(t0 + timedelta(days=431))
    assert tier() == ("active", "provisional")
    life.clock = lambda: t0 + timedelta(days=432)  # the injected clock of manual changes
    life.set_manual("u1", mem.id, "alice", "wrong value", status="conflicted")
    life.set_manual("u1", mem.id, "alice", "fixed", status="active")
    payload = rt.index._memory_payloads({mem.id})[mem.id]
    assert (payload["status"], payload["tier"]) == tier()
    changes = [(m, v) for _s, m, _u, v in life.tables.changelog.read_changes()]
    # replay into fresh stores built from the same events, lifecycle off
    rt2 = _runtime(tmp_path / "b", lifecycle_enabled=False)
    rt2.gateway.submit([e for e in golden_events() if e["thread_id"] == "inventory-cron"], "cli")
    rt2.gateway.wait_processed(60)
    rt2.lifecycle.replay(changes)
    row2 = rt2.memories.get_memory_row("u1", mem.id)
    assert (row2["status"], row2["tier"]) == tier()
    life.sweep(t0 + timedelta(days=439))
    assert tier() == ("gone", "gone")
    assert life.tables.changelog.read_changes()[-1][3] is None  # tombstone
    fields = [(a["field"], a["from_value"], a["to_value"], a["actor"])
              for a in rt.audit.list_audit("u1", mem.id)]
    assert fields == [
        ("tier", "provisional", "confirmed", "sweeper"), ("tier", "confirmed", "active", "sweeper"),
        ("tier", "active", "confirmed", "sweeper"), ("tier", "confirmed", "provisional", "sweeper"),
        ("status", "active", "conflicted", "alice"), ("status", "conflicted", "active", "alice"),
        ("tier", "provisional", "deleted", "sweeper")]
    rt2.lifecycle.replay([(mem.id, None)])
    assert rt2.memories.get_memory_row("u1", mem.id) is None
    rt.stop()
    rt2.stop()


def test_archive_then_recall_restores_evidence_from_cold(tmp_path: Path) -> None:
    rt = _runtime(tmp_path)
    events = [e for e in golden_events() if e["thread_id"] == "db-setup" and e["user_id"] == "u1"]
    rt.gateway.submit(events, "cli")
    rt.gateway.wait_processed(60)
    [mem] = rt.memories.list_memories("u1", 10)
    rng = mem.source_range
    hot = rt.derived_store()
    before = hot.events.get_range("u1", rng.thread_id, rng.start_index, rng.end_index)
    rt.lifecycle.set_manual("u1", mem.id, "ops", "cold", status="archived")
    assert hot.events.get_range("u1", rng.thread_id, rng.start_index, rng.end_index) == []
    assert hot.chunks.get_chunks("u1", mem.id) == []
    assert rt.raw.get_range("u1", rng.thread_id, rng.start_index, rng.end_index) == before
    from breadcrumb.query_api.models import RecallRequest

    answer = rt.recall.recall(RecallRequest(user_id="u1", query="DB_PORT value in .env",
                                            include_archived=True))
    assert answer["memories"][0]["status"] == "archived"
    assert any("DB_PORT=5432" in e["extracted_text"] for e in answer["evidence"])
    rt.lifecycle.set_manual("u1", mem.id, "ops", "back", status="active")
    assert hot.events.get_range("u1", rng.thread_id, rng.start_index, rng.end_index) == before
    assert len(hot.chunks.get_chunks("u1", mem.id)) > 0
    rt.stop()


def test_verification_promotes_and_dedupe_merges(tmp_path: Path) -> None:
    rt = _runtime(tmp_path)
    base = [e for e in golden_events() if e["thread_id"] == "auth-email-regex"
            and e["user_id"] == "u2"]
    copy = [dict(e, thread_id="again", event_id="c" + e["event_id"],
                 ts=e["ts"].replace("2024-05-13", "2024-05-14")) for e in base]
    rt.gateway.submit(base + copy, "cli")
    rt.gateway.wait_processed(60)
    memories = rt.memories
    rows = sorted((memories.get_memory_row("u2", m.id) for m in memories.list_memories("u2")),
                  key=lambda r: r["source_thread_id"])
    again, first = rows
    # its own passing test (confirmed), then the corroborating copy's test (active)
    assert first["tier"] == "active"
    assert (again["status"], again["superseded_by"]) == ("superseded", first["id"])
    assert first["metadata"]["merged_ranges"][again["id"]]["thread_id"] == "again"
    rt.stop()


def _lifecycle_state(rt: Runtime) -> list[Any]:
    store: Any = rt.derived_store()
    memories = sorted(store.db.read("SELECT id, status, superseded_by, supersedes_memory_id "
                                  "FROM agent_memories"))
    facts = sorted(store.db.read("SELECT memory_id, fact_key, value, state FROM memory_facts"))
    return [memories, facts]


def test_replicated_threads_end_the_same_whatever_order_they_came_in(tmp_path: Path) -> None:
    """Two copies of u1's regex history (a session imported twice: same facts, same times),
    threads applied in two different orders: the duplicate, the superseded facts and every
    status and link end the same (a CI run of the scale-out test and a shuffled embedded
    ingest found a copy 'active' in one order and 'superseded' in another: a replica whose
    value had been superseded first was no longer recognised as a duplicate)."""
    threads: dict[str, list[dict[str, Any]]] = {}
    for k in range(2):
        for e in golden_events():
            if e["user_id"] == "u1" and e["thread_id"].startswith("auth-email-regex"):
                t = f"{e['thread_id']}~{k}"
                threads.setdefault(t, []).append(
                    {**e, "event_id": f"{e['event_id']}~{k}", "thread_id": t})
    orders = (["auth-email-regex~0", "auth-email-regex~1", "auth-email-regex-v2~0",
               "auth-email-regex-v2~1"],
              ["auth-email-regex~1", "auth-email-regex-v2~0", "auth-email-regex~0",
               "auth-email-regex-v2~1"])
    assert set(orders[0]) == set(threads)
    states = []
    for n, order in enumerate(orders):
        rt = _runtime(tmp_path / str(n))
        for t in order:
            rt.gateway.submit(threads[t], "cli")
            rt.gateway.wait_processed(60)
        states.append(_lifecycle_state(rt))
        rt.stop()
    memories, facts = states[0]
    assert sum(1 for m in memories if m[1] == "superseded") >= 2  # a duplicate of each
    assert any(f[3] == "superseded" for f in facts)
    assert states[1] == states[0]


def test_a_tier_change_leaves_the_chunk_payloads_alone(tmp_path: Path) -> None:
    """Issue 49: a status goes to every chunk point of its memory, so a change of the tier
    alone writes only the tier (each needless chunk rewrite left blocks behind on disk)."""
    rt = _runtime(tmp_path)
    rt.gateway.submit([e for e in golden_events() if e["thread_id"] == "inventory-cron"], "cli")
    rt.gateway.wait_processed(60)
    [mem] = rt.memories.list_memories("u1", 10)
    written: list[dict[str, Any]] = []
    single, many = rt.index.set_memory_payload, rt.index.set_memory_payloads

    def one(memory_id: str, values: dict[str, Any]) -> None:
        written.append(dict(values))
        single(memory_id, values)

    def batch(updates: Any) -> list[str]:
        written.extend(dict(values) for _, values in updates)
        return many(updates)

    rt.index.set_memory_payload = one  # type: ignore[method-assign]
    rt.index.set_memory_payloads = batch  # type: ignore[method-assign]
    t0 = datetime.fromisoformat(mem.created_at.replace("Z", "+00:00"))
    for i in range(3):
        rt.memories.record_usage("u1", [mem.id], (t0 + timedelta(hours=i + 1)).isoformat())
    rt.lifecycle.sweep(t0 + timedelta(hours=4))
    row = rt.memories.get_memory_row("u1", mem.id)
    assert (row["status"], row["tier"]) == ("active", "confirmed")
    assert written == [{"tier": "confirmed"}]
    payload = rt.index._memory_payloads({mem.id})[mem.id]
    assert (payload["status"], payload["tier"]) == ("active", "confirmed")
    rt.lifecycle.set_manual("u1", mem.id, "alice", "wrong value", status="conflicted")
    assert written[-1] == {"status": "conflicted"}
    hits = rt.index.search_chunks(_flt("u1", ("conflicted",)), 10, dense=[0.1] * rt.embedder.dim)
    assert hits and {h.payload["memory_id"] for h in hits} == {mem.id}
    rt.stop()

"""Cluster-mode replay: a new consumer group reads ``agent-events`` from the earliest offset
into a new MySQL database + Qdrant collections, the alias switches while recall runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pymysql
import pytest

from breadcrumb.settings import Settings
from breadcrumb.stores.generations.cluster import ClusterCatalog, generation_settings
from tests.conftest import example_events, wait_until
from tests.integration.conftest import (
    cluster_settings,
    drop_database,
    free_port,
    start_worker,
    stop_worker,
    wait_api,
)

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
QUESTION = {"user_id": "demo", "query": "which image tag is shop-api pinned to?"}


def _memories(settings: Settings, thread: str | None = None) -> dict[str, tuple[str, str]]:
    """id -> (status, tier) of the memories in ``settings``' database (of one thread)."""
    conn = pymysql.connect(host=settings.mysql_host, port=settings.mysql_port, user="breadcrumb",
                           password="breadcrumb", database=settings.mysql_database)
    where, params = ("WHERE source_thread_id = %s", (thread,)) if thread else ("", ())
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT id, status, tier FROM agent_memories {where}", params)
            return {(i.decode() if isinstance(i, bytes) else i): (s, t)
                    for i, s, t in cur.fetchall()}
    finally:
        conn.close()


class _Hammer(threading.Thread):
    """Asks the same question as fast as it can; keeps every outcome."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.stop = threading.Event()
        self.outcomes: list[Any] = []

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as http:
            while not self.stop.is_set():
                try:
                    answer = http.post("/v1/recall", json=QUESTION)
                    top = answer.json()["memories"][0]["source_range"]["thread_id"] \
                        if answer.status_code == 200 and answer.json()["memories"] else None
                    self.outcomes.append((answer.status_code, top))
                except Exception as exc:  # a failed recall is what this test looks for
                    self.outcomes.append((repr(exc), None))


def test_replay_into_new_generation_while_recall_runs(tmp_path: Path) -> None:
    settings = cluster_settings(tmp_path)
    log = tmp_path / "worker.log"
    worker = start_worker(settings, log, "--serve-api")
    url = f"http://127.0.0.1:{settings.port}"
    new_db = generation_settings(settings, "g2").mysql_database
    try:
        wait_api(worker, log, url)
        events = example_events()
        assert httpx.post(f"{url}/v1/events", json={"events": events}, timeout=60).status_code \
            == 202
        wait_until(lambda: httpx.get(f"{url}/v1/stats").json()["pending"] == 0, timeout=180,
                   interval=0.5)
        before = _memories(settings)
        assert len(before) >= 2
        manual = sorted(before)[0]  # a manual change is not in the event log: carried over
        patched = httpx.patch(f"{url}/v1/memories/{manual}", json={
            "user_id": "demo", "tier": "active", "actor": "test", "reason": "pinned by hand"})
        assert patched.status_code == 200, patched.text

        hammer = _Hammer(url)
        hammer.start()
        wait_until(lambda: len(hammer.outcomes) >= 3, timeout=60, interval=0.2)
        started = httpx.post(f"{url}/v1/admin/replay", json={"name": "g2"})
        assert started.status_code == 202, started.text
        assert httpx.post(f"{url}/v1/admin/replay", json={"name": "g3"}).status_code == 409
        seen: list[dict[str, Any]] = []

        def finished() -> bool:
            status = httpx.get(f"{url}/v1/admin/replay").json()
            seen.append(status)
            assert status["state"] != "failed", (status, log.read_text()[-4000:])
            return bool(status["state"] == "done")
        wait_until(finished, timeout=90, interval=0.5)
        switched_at = len(hammer.outcomes)
        wait_until(lambda: len(hammer.outcomes) >= switched_at + 5, timeout=60, interval=0.2)
        hammer.stop.set()
        hammer.join(30)

        # recall never failed, before, during or after the switch
        assert hammer.outcomes and all(o == (200, "deploy-pipeline") for o in hammer.outcomes), \
            [o for o in hammer.outcomes if o != (200, "deploy-pipeline")][:5]
        final = seen[-1]
        # every message of the topic (events + flush markers) was applied, with an ETA shown
        assert final["applied"] == final["total"] >= len(events)
        assert any(s.get("eta_seconds") is not None for s in seen[:-1]) or len(seen) <= 2

        # same memory ids, the manual change carried over, the alias names g2
        after = _memories(generation_settings(settings, "g2"))
        assert set(after) == set(before)
        assert after[manual][1] == "active"
        gens = httpx.get(f"{url}/v1/admin/generations").json()
        assert gens["current"] == "g2" and gens["generations"]["main"]["state"] == "old"
        assert gens["generations"]["g2"]["consumer_group"] == f"{settings.worker_id}__g2"
        assert httpx.get(f"{url}/v1/stats").json()["generation"] == "g2"
        assert httpx.delete(f"{url}/v1/admin/generations/g2").status_code == 409  # current

        # the new generation's worker keeps ingesting
        fresh = [{**e, "event_id": f"after-{i}", "thread_id": "after-switch"}
                 for i, e in enumerate(events[:12])]
        assert httpx.post(f"{url}/v1/events", json={"events": fresh}).status_code == 202
        httpx.post(f"{url}/v1/flush", json={"user_id": "demo", "thread_id": "after-switch"})
        wait_until(lambda: bool(_memories(generation_settings(settings, "g2"), "after-switch")),
                   timeout=120, interval=0.5)
    finally:
        stop_worker(worker)
        drop_database(new_db)
        drop_database(settings.mysql_database)


def test_catalog_alias_switch_and_removal(tmp_path: Path) -> None:
    settings = cluster_settings(tmp_path, port=free_port())
    catalog = ClusterCatalog(settings)
    gen_db = generation_settings(settings, "gx").mysql_database
    try:
        assert catalog.current() == "main" and catalog.names() == ["main"]
        made = catalog.create("gx", {"embedder": "hash"}, "2026-11-30T00:00:00+00:00")
        assert made.mysql_database == gen_db
        with pytest.raises(ValueError, match="already exists"):
            catalog.create("gx", {}, "2026-11-30T00:00:00+00:00")
        assert catalog.describe()["generations"]["gx"]["state"] == "building"
        assert catalog.switch("gx") == "main"
        assert catalog.current() == "gx"
        with pytest.raises(ValueError, match="current"):
            catalog.remove("gx")
        catalog.switch("main")
        with pytest.raises(ValueError, match="cannot be removed"):
            catalog.remove("main")
        catalog.remove("gx")
        assert catalog.names() == ["main"]
        conn = pymysql.connect(host=settings.mysql_host, port=settings.mysql_port,
                               user="breadcrumb", password="breadcrumb")
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW DATABASES LIKE %s", (gen_db,))
                assert cur.fetchall() == ()
        finally:
            conn.close()
    finally:
        drop_database(gen_db)
        drop_database(settings.mysql_database)


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BREADCRUMB_EMBEDDER": "hash", "PYTHONPATH": str(ROOT)}
    for name in ("mode", "data_dir", "topic_prefix", "worker_id", "mysql_database"):
        env[f"BREADCRUMB_{name.upper()}"] = str(getattr(settings, name))
    return subprocess.run([sys.executable, "-m", "breadcrumb.cli", "replay", *args], env=env,
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_replay_command_without_a_service(tmp_path: Path) -> None:
    """`breadcrumb replay` in cluster mode with no service running: builds the generation
    from the topic in-process, switches the alias, and says what workers do next."""
    import asyncio

    from breadcrumb.infra.cluster import declare_topics
    from breadcrumb.sdk import Publisher

    settings = cluster_settings(tmp_path)
    asyncio.run(declare_topics(settings))
    events = example_events()

    async def publish() -> None:
        async with Publisher(settings=settings) as pub:
            await pub.publish_many(events)
    asyncio.run(publish())
    gen_db = generation_settings(settings, "g1").mysql_database
    try:
        done = _cli(settings, "--name", "g1")
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"generation g1: done, {len(events)} log entries" in done.stdout
        assert "restart `breadcrumb worker`" in done.stderr and "ETA" in done.stderr
        built = _memories(generation_settings(settings, "g1"))
        assert len(built) == 2 and {s for s, _ in built.values()} == {"active"}
        listed = _cli(settings, "--list")
        assert json.loads(listed.stdout)["current"] == "g1"
        refused = _cli(settings, "--name", "g1")
        assert refused.returncode != 0 and "already exists" in refused.stderr
    finally:
        drop_database(gen_db)
        drop_database(settings.mysql_database)

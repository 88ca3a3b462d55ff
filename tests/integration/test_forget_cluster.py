"""Forget in cluster mode (issue 26): Kafka + MariaDB + vectors + S3 archive. After a
thread is forgotten its exact value is in no SQL row, no S3 object, no recall, no record
of ``agent-events``, its DLQ or ``observations`` (the forget rewrites them: every
surviving event is there once)
and, after the broker's retention check, in no byte of those topics' files; a re-post of
the same transcript is refused, and a replay into a new generation does not bring it back."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
import pymysql
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from breadcrumb.infra.cluster_stores import build_cold_store
from breadcrumb.settings import Settings
from breadcrumb.stores.cold.storage import escape_key_part
from breadcrumb.stores.generations.cluster import generation_settings
from breadcrumb.streams.kafka.replay import partitions_of
from breadcrumb.topics.names import AGENT_EVENTS, DEAD_LETTERS, OBSERVATIONS
from tests.conftest import wait_until
from tests.integration.conftest import (
    cluster_settings,
    drop_database,
    start_worker,
    stop_worker,
    wait_api,
)
from tests.integration.kafka_disk import broker_configs, holders, read_to_end, wait_removed
from tests.support.memview import changed_value, secret

pytestmark = pytest.mark.integration


def _sql_hits(settings: Settings, needle: str) -> list[str]:
    conn = pymysql.connect(host=settings.mysql_host, port=settings.mysql_port, user="breadcrumb",
                           password="breadcrumb", database=settings.mysql_database)
    found = []
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW TABLES")
            for (table,) in cur.fetchall():
                name = table.decode() if isinstance(table, bytes) else table
                cur.execute(f"SELECT * FROM `{name}`")
                found += [name for row in cur.fetchall() if needle.encode() in repr(
                    row).encode() or needle in repr(row)]
    finally:
        conn.close()
    return found


def _recall(url: str, user: str) -> dict[str, Any]:
    answer = httpx.post(f"{url}/v1/recall", timeout=60, json={
        "user_id": user, "query": "the exact API_TOKEN value", "include_superseded": True,
        "include_archived": True, "mode": "source"})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _settled(url: str) -> None:
    wait_until(lambda: httpx.get(f"{url}/v1/stats").json()["pending"] == 0, timeout=240,
               interval=0.5)


async def _values(settings: Settings, topic: str) -> list[bytes]:
    """Every value a reader from the beginning of ``topic`` gets."""
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.kafka_bootstrap, group_id=None,
                                enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in await partitions_of(settings, topic)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        return [r.value or b"" for r in await read_to_end(consumer, tps)]
    finally:
        await consumer.stop()


LOGS = (AGENT_EVENTS, DEAD_LETTERS, OBSERVATIONS)  # every topic with texts of a thread


def _in_log(settings: Settings, needle: str) -> dict[str, list[bytes]]:
    """The values of each of :data:`LOGS` holding ``needle``."""
    return {t: [v for v in asyncio.run(_values(settings, settings.topic(t)))
                if needle.encode() in v] for t in LOGS}


def _log_rewrite(settings: Settings) -> subprocess.CompletedProcess[str]:
    """``breadcrumb log rewrite`` as an operator runs it (BREADCRUMB_* variables)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for name in ("mode", "data_dir", "topic_prefix", "mysql_database"):
        env[f"BREADCRUMB_{name.upper()}"] = str(getattr(settings, name))
    return subprocess.run([sys.executable, "-m", "breadcrumb.cli", "log", "rewrite"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)


def test_forget_a_thread_in_cluster_mode(tmp_path: Path) -> None:
    settings = cluster_settings(tmp_path)
    tag = uuid.uuid4().hex[:8]
    u1, u2 = f"u1-{tag}", f"u2-{tag}"
    log = tmp_path / "worker.log"
    worker = start_worker(settings, log, "--serve-api")
    url = f"http://127.0.0.1:{settings.port}"
    cold = build_cold_store(settings)
    prefix = f"archive/{escape_key_part(u1)}/"
    try:
        wait_api(worker, log, url)
        events = changed_value(u1) + changed_value(u2)
        assert httpx.post(f"{url}/v1/events", json={"events": events}, timeout=60
                          ).status_code == 202
        _settled(url)
        page = httpx.get(f"{url}/v1/memories", params={"user_id": u1, "thread": "db-setup"})
        old = page.json()["memories"][0]["id"]
        archived = httpx.patch(f"{url}/v1/memories/{old}", timeout=60, json={
            "user_id": u1, "status": "archived", "reason": "to S3", "actor": "t"})
        assert archived.status_code == 200, archived.text
        assert cold.list_keys(prefix)
        assert secret(u1) in repr(_recall(url, u1)) and _sql_hits(settings, secret(u1))

        topic = settings.topic(AGENT_EVENTS)
        before = _in_log(settings, secret(u1))  # the event and its memory, before
        assert before[AGENT_EVENTS] and before[OBSERVATIONS]
        assert holders(settings.kafka_bootstrap, topic, secret(u1).encode())

        done = httpx.post(f"{url}/v1/forget", json={"user_id": u1, "thread_id": "db-setup"},
                          timeout=120)
        assert done.status_code == 200, done.text
        rewrite = done.json()["log_rewrite"]
        assert rewrite["erased"] >= 3 and rewrite["rewritten"], rewrite
        assert _in_log(settings, secret(u1)) == dict.fromkeys(LOGS, [])
        events = [orjson.loads(v) for v in asyncio.run(_values(settings, topic))]
        ids = [(e["user_id"], e["event_id"]) for e in events if "event_id" in e]
        survivors = {(e["user_id"], e["event_id"]) for e in changed_value(u1) + changed_value(u2)
                     if e["thread_id"] != "db-setup" or e["user_id"] == u2}
        assert sorted(ids) == sorted(survivors)  # every survivor once, copies counted
        rerun = _log_rewrite(settings)  # run again by an operator: nothing left to remove
        assert rerun.returncode == 0, rerun.stderr
        assert orjson.loads(rerun.stdout)["erased"] == 0, rerun.stdout

        def nowhere(db: Settings) -> None:
            assert _sql_hits(db, secret(u1)) == []
            assert cold.list_keys(prefix) == []
            assert secret(u1) not in repr(_recall(url, u1))
            assert httpx.get(f"{url}/v1/threads/db-setup/events",
                             params={"user_id": u1}).json() == []

        nowhere(settings)
        again = httpx.post(f"{url}/v1/events", json={"events": changed_value(u1)}, timeout=60)
        assert [r["position"] for r in again.json()["rejected"]] == [0, 1, 2]
        _settled(url)
        nowhere(settings)
        assert httpx.post(f"{url}/v1/admin/replay", json={"name": "g2"}).status_code == 202

        def replayed() -> bool:
            status = httpx.get(f"{url}/v1/admin/replay").json()
            assert status["state"] != "failed", (status, log.read_text()[-3000:])
            return bool(status["state"] == "done")

        wait_until(replayed, timeout=180, interval=0.5)
        g2 = generation_settings(settings, "g2")
        nowhere(g2)
        assert _sql_hits(g2, secret(u2))  # the scan reads the replayed database
        assert secret(u2) in repr(_recall(url, u2))  # the other tenant is untouched
        assert _in_log(settings, secret(u1)) == dict.fromkeys(LOGS, [])
        delay = int(broker_configs(settings.kafka_bootstrap)["log.segment.delete.delay.ms"])
        for name in LOGS:  # the broker's files, after its retention check
            wait_removed(settings.kafka_bootstrap, settings.topic(name), secret(u1).encode(),
                         delay)
        assert holders(settings.kafka_bootstrap, topic, secret(u2).encode())  # kept
    finally:
        stop_worker(worker)
        for key in cold.list_keys(f"archive/{escape_key_part(u2)}/"):
            cold.delete_object(key)
        drop_database(generation_settings(settings, "g2").mysql_database)
        drop_database(settings.mysql_database)

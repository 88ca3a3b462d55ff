"""Manual lifecycle control over HTTP and the CLI: PATCH, audit, history."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.conftest import example_events
from tests.support.clients import drain, hash_client


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    with hash_client(tmp_path) as http:
        http.post("/v1/events", json={"events": example_events()})
        drain(http, timeout=60)
        yield http


def _first_memory(client: TestClient) -> str:
    answer = client.post("/v1/recall", json={"user_id": "demo", "query": "email regex"}).json()
    return str(answer["memories"][0]["id"])


def test_patch_writes_audit_and_changes_recall_filtering(client: TestClient) -> None:
    mid = _first_memory(client)
    got = client.get(f"/v1/memories/{mid}", params={"user_id": "demo"}).json()
    assert got["tier"] == "provisional" and "history" in got
    patched = client.patch(f"/v1/memories/{mid}", json={
        "user_id": "demo", "tier": "confirmed", "reason": "checked by hand", "actor": "alice"})
    assert patched.status_code == 200 and patched.json()["tier"] == "confirmed"
    client.patch(f"/v1/memories/{mid}", json={
        "user_id": "demo", "status": "archived", "reason": "obsolete", "actor": "alice"})
    audit = client.get(f"/v1/memories/{mid}/audit", params={"user_id": "demo"}).json()
    changes = [(a["field"], a["from"], a["to"], a["actor"], a["reason"]) for a in audit]
    assert ("tier", "provisional", "confirmed", "alice", "checked by hand") in changes
    assert ("status", "active", "archived", "alice", "obsolete") in changes
    default = client.post("/v1/recall", json={"user_id": "demo", "query": "email regex"}).json()
    assert mid not in [m["id"] for m in default["memories"]]
    archived = client.post("/v1/recall", json={"user_id": "demo", "query": "email regex",
                                               "include_archived": True}).json()
    assert mid in [m["id"] for m in archived["memories"]]


def test_patch_errors_are_4xx_with_reasons(client: TestClient) -> None:
    mid = _first_memory(client)
    bad = client.patch(f"/v1/memories/{mid}", json={
        "user_id": "demo", "status": "deleted-ish", "reason": "x", "actor": "a"})
    assert bad.status_code == 422 and bad.json()["error"]["message"]
    nothing = client.patch(f"/v1/memories/{mid}", json={"user_id": "demo", "reason": "x"})
    assert nothing.status_code == 422
    other = client.patch(f"/v1/memories/{mid}", json={
        "user_id": "intruder", "tier": "active", "reason": "x", "actor": "a"})
    assert other.status_code == 404
    assert client.get(f"/v1/memories/{mid}/audit",
                      params={"user_id": "intruder"}).status_code == 404


def test_cli_memory_set_show_audit(tmp_path: Path) -> None:
    data = tmp_path / "data"
    base = [sys.executable, "-m", "breadcrumb.cli"]
    env_args = ["--data-dir", str(data), "--embedder", "hash"]
    subprocess.run([*base, "ingest", "examples/agent-session.jsonl", *env_args], check=True,
                   capture_output=True, timeout=300)
    recall = subprocess.run([*base, "recall", "email regex", "--user", "demo", "--json",
                             *env_args], check=True, capture_output=True, text=True, timeout=300)
    mid = json.loads(recall.stdout)["memories"][0]["id"]
    changed = subprocess.run([*base, "memory", "set", mid, "--user", "demo", "--tier", "active",
                              "--reason", "pinned", *env_args], capture_output=True, text=True,
                             timeout=300)
    assert changed.returncode == 0, changed.stderr
    assert json.loads(changed.stdout)["tier"] == "active"
    audit = subprocess.run([*base, "memory", "audit", mid, "--user", "demo", *env_args],
                           capture_output=True, text=True, timeout=300, check=True)
    assert json.loads(audit.stdout)[-1]["to"] == "active"
    missing = subprocess.run([*base, "memory", "show", "nope", "--user", "demo", *env_args],
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 1 and "no memory" in missing.stderr

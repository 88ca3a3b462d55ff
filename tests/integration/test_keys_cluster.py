"""Cluster mode keeps API keys in the SQL store (real MariaDB, a throw-away database)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from breadcrumb.query_api.auth import KeyRing, SecurityMiddleware
from breadcrumb.settings import Settings
from breadcrumb.stores.keys.store import mysql_key_store
from tests.conftest import ROOT
from tests.integration.conftest import cluster_settings, drop_database

pytestmark = pytest.mark.integration


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BREADCRUMB_MODE": "cluster",
           "BREADCRUMB_MYSQL_DATABASE": settings.mysql_database,
           "BREADCRUMB_DATA_DIR": str(settings.data_dir)}
    return subprocess.run([sys.executable, "-m", "breadcrumb.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_keys_live_in_the_sql_store(tmp_path: Path) -> None:
    settings = cluster_settings(tmp_path)
    try:
        refused = _cli(settings, "worker", "--serve-api", "--host", "0.0.0.0")
        assert refused.returncode == 2 and "no API key exists" in refused.stderr

        made = _cli(settings, "keys", "create", "--tenant", "acme", "--role", "reader")
        assert made.returncode == 0, made.stderr
        key = made.stdout.strip().splitlines()[-1]
        store = mysql_key_store(settings)
        [row] = store.list_keys()
        assert row.tenant == "acme" and row.role == "reader" and row.revoked_at is None
        assert key.split("_", 2)[2] not in (row.secret_hash + row.salt)

        app = FastAPI()

        @app.get("/v1/stats")
        async def stats() -> dict[str, bool]:
            return {"ok": True}

        app.add_middleware(SecurityMiddleware, settings=settings,
                           keyring=KeyRing(store, ttl=0))
        http = TestClient(app)
        auth = {"Authorization": f"Bearer {key}"}
        assert http.get("/v1/stats").status_code == 401
        assert http.get("/v1/stats", headers=auth).status_code == 200

        assert _cli(settings, "keys", "revoke", row.key_id).returncode == 0
        assert http.get("/v1/stats", headers=auth).status_code == 401
        listed = _cli(settings, "keys", "list", "--json")
        assert '"revoked_at": null' not in listed.stdout and row.key_id in listed.stdout
    finally:
        drop_database(settings.mysql_database)

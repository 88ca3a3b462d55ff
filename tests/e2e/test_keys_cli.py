"""``breadcrumb keys`` against a live ``breadcrumb serve``: keys take effect without a restart,
the CLI sends them (``BREADCRUMB_API_KEY`` / ``--api-key``), revocation locks a key out,
and ``serve --host 0.0.0.0`` refuses to start while no key exists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import EXAMPLE, ROOT, wait_until
from tests.e2e.test_dashboard_browser import server  # noqa: F401  (the fixture, by name)
from tests.e2e.test_mcp import REGEX

QUERY = "the exact email regex we decided for sign-up"


def _cli(*args: str, key: str | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BREADCRUMB_API_KEY"}
    if key is not None:
        env["BREADCRUMB_API_KEY"] = key
    return subprocess.run([sys.executable, "-m", "breadcrumb.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_serve_refuses_a_public_bind_without_keys(tmp_path: Path) -> None:
    done = _cli("serve", "--host", "0.0.0.0", "--data-dir", str(tmp_path / "d"),
                "--embedder", "hash", timeout=120)
    assert done.returncode == 2
    assert "no API key exists" in done.stderr and "keys create" in done.stderr


def test_keys_with_a_running_server(tmp_path: Path, server: str) -> None:  # noqa: F811
    data_dir = str(tmp_path / "data")  # where the dashboard test's fixture serves from
    assert httpx.get(f"{server}/v1/stats").status_code == 200  # no key yet: open, loopback

    made = {}
    for name, role in (("agent", "agent"), ("reader", "reader")):
        done = _cli("keys", "create", "--tenant", "demo", "--role", role, "--data-dir", data_dir)
        assert done.returncode == 0, done.stderr
        made[name] = done.stdout.strip().splitlines()[-1]
        assert made[name].startswith("bc_")
    wait_until(lambda: httpx.get(f"{server}/v1/stats").status_code == 401, timeout=10)

    refused = _cli("ingest", str(EXAMPLE), "--url", server)
    assert refused.returncode == 1 and "401" in refused.stderr
    ingested = _cli("ingest", str(EXAMPLE), "--url", server, key=made["agent"])
    assert ingested.returncode == 0, ingested.stderr

    reader = made["reader"]
    answer = _cli("recall", QUERY, "--user", "demo", "--url", server, "--json", "--api-key",
                  reader)
    assert answer.returncode == 0, answer.stderr
    evidence = json.loads(answer.stdout)["evidence"]
    assert REGEX in "\n".join(e["extracted_text"] for e in evidence)
    foreign = _cli("recall", QUERY, "--user", "someone", "--url", server, "--api-key", reader)
    assert foreign.returncode == 1 and "403" in foreign.stderr
    agent_reads = httpx.get(f"{server}/v1/threads/auth-refactor/events",
                            headers={"Authorization": f"Bearer {made['agent']}"})
    assert agent_reads.status_code == 403  # an agent publishes and recalls, it does not read

    listed = _cli("keys", "list", "--json", "--data-dir", data_dir)
    assert listed.returncode == 0 and reader.split("_", 2)[2] not in listed.stdout
    reader_id = reader.split("_")[1]
    assert reader_id in listed.stdout
    assert _cli("keys", "revoke", reader_id, "--data-dir", data_dir).returncode == 0
    assert _cli("keys", "revoke", reader_id, "--data-dir", data_dir).returncode == 1
    auth = {"Authorization": f"Bearer {reader}"}
    wait_until(lambda: httpx.get(f"{server}/v1/stats", headers=auth).status_code == 401,
               timeout=10)


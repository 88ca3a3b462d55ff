"""A new user's first hour with keys (issue 24): ``serve``, a key, then every client path
against the running service through ``--data-dir`` — the real CLI in subprocesses.

Once a key exists, the owner hand-off of ``--data-dir`` must carry the key (it used to ask
``GET /v1/identity`` without it: 60 s of ``401`` lines, then a failure); a wrong or
missing key is one line naming the variable or the flag; the output carries no request
log; the service's access log skips its polling; a clean SIGTERM leaves no ``server.json``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import EXAMPLE, ROOT, wait_until
from tests.e2e.test_data_dir_owner import free_port
from tests.unit.test_importers import CLAUDE

CLI = [sys.executable, "-m", "breadcrumb.cli"]
HASH = ["--embedder", "hash"]
QUERY = "which port does the database use now?"


def _env(key: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("BREADCRUMB_API_KEY", "BREADCRUMB_USER_ID", "BREADCRUMB_DATA_DIR")}
    env["BREADCRUMB_SERVER_WAIT_SECONDS"] = "20"  # a stall fails fast instead of in 60 s
    if key is not None:
        env["BREADCRUMB_API_KEY"] = key
    return env


def cli(*args: str, key: str | None = None,
        timeout: float = 300) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([*CLI, *args], cwd=ROOT, env=_env(key), capture_output=True,
                          text=True, timeout=timeout, check=False)
    return done, time.monotonic() - started


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


class Served:
    def __init__(self, data_dir: Path, url: str, proc: subprocess.Popen[bytes],
                 log: Path) -> None:
        self.data_dir, self.url, self.proc, self.log = data_dir, url, proc, log


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[Served]:
    data_dir, port = tmp_path / "data", free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([*CLI, "serve", "--port", str(port), "--data-dir",
                                 str(data_dir), *HASH], cwd=ROOT, stdout=log,
                                stderr=subprocess.STDOUT,
                                env={**_env(), "PYTHONUNBUFFERED": "1"})
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until(lambda: _healthy(url) or proc.poll() is not None, timeout=90,
                       interval=0.2)
            assert proc.poll() is None, log_path.read_text(errors="replace")
            yield Served(data_dir, url, proc, log_path)
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(30)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_every_client_path_sends_the_key_through_the_data_dir(served: Served) -> None:
    dd = ["--data-dir", str(served.data_dir)]
    made, _ = cli("keys", "create", "--tenant", "demo", "--role", "admin", *dd)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip().splitlines()[-1]
    wait_until(lambda: httpx.get(f"{served.url}/v1/stats").status_code == 401, timeout=10)

    ingested, _ = cli("ingest", str(EXAMPLE), *dd, *HASH, key=key)
    assert ingested.returncode == 0, ingested.stderr
    assert json.loads(ingested.stdout)["accepted"] > 0
    assert "401" not in ingested.stderr and "HTTP Request" not in ingested.stderr
    assert ingested.stderr.strip() == ""  # quiet: no request log, no progress noise

    imported, _ = cli("import", str(CLAUDE), *dd, "--user", "demo", key=key)
    assert imported.returncode == 0, imported.stderr
    assert "401" not in imported.stderr and "HTTP Request" not in imported.stderr

    # the hand-off answers at once (it stalled 60 s before): loosely, against the same
    # recall sent to --url in the same run (a loaded machine slows both alike)
    direct, baseline = cli("recall", QUERY, "--url", served.url, "--json", key=key)
    assert direct.returncode == 0, direct.stderr
    answer, seconds = cli("recall", QUERY, *dd, "--json", "--api-key", key)
    assert answer.returncode == 0, answer.stderr
    assert seconds < baseline + 10, (seconds, baseline)
    assert "401" not in answer.stderr and "HTTP Request" not in answer.stderr
    evidence = "\n".join(e["extracted_text"] for e in json.loads(answer.stdout)["evidence"])
    assert "6432" in evidence  # no --user: the key's own tenant ("demo") was searched

    memory_id = json.loads(answer.stdout)["memories"][0]["id"]
    shown, _ = cli("memory", "show", memory_id, *dd, key=key)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["id"] == memory_id

    assert anyio.run(_mcp_search, served.data_dir, key)  # mcp over stdio, handed off


def test_a_wrong_or_missing_key_is_one_line(served: Served) -> None:
    dd = ["--data-dir", str(served.data_dir)]
    made, _ = cli("keys", "create", "--tenant", "demo", "--role", "reader", *dd)
    assert made.returncode == 0, made.stderr
    wait_until(lambda: httpx.get(f"{served.url}/v1/stats").status_code == 401, timeout=10)

    wrong, _ = cli("recall", QUERY, *dd, key="bc_000000000000_wrong")
    assert wrong.returncode == 1  # refused at once, not "did not answer within 20 s"
    assert "BREADCRUMB_API_KEY" in one_line(wrong) and "refused" in wrong.stderr
    flag, _ = cli("recall", QUERY, *dd, "--api-key", "bc_000000000000_wrong")
    assert flag.returncode == 1 and "--api-key" in one_line(flag)
    missing, _ = cli("recall", QUERY, *dd)
    line = one_line(missing)
    assert missing.returncode == 1 and "BREADCRUMB_API_KEY" in line and "--api-key" in line
    over_url, _ = cli("ingest", str(EXAMPLE), "--url", served.url)
    assert over_url.returncode == 1 and "needs an API key" in one_line(over_url)
    watched, _ = cli("watch", str(CLAUDE.parent), "--once", *dd, "--state",
                     str(served.data_dir.parent / "w.json"), key="bc_000000000000_wrong")
    assert watched.returncode == 1 and "BREADCRUMB_API_KEY" in one_line(watched)


async def _mcp_search(data_dir: Path, key: str) -> bool:
    params = StdioServerParameters(command=sys.executable, cwd=str(ROOT), env=_env(key),
                                   args=["-m", "breadcrumb.cli", "mcp", "--data-dir",
                                         str(data_dir), *HASH])
    async with Client(params, read_timeout_seconds=60) as client:
        result = await client.call_tool("search_memory", {"query": QUERY, "mode": "source"})
    text = "\n".join(block.text for block in result.content if block.type == "text")
    assert not result.is_error, text
    return "6432" in text


def test_quiet_logs_and_a_clean_stop(served: Served) -> None:
    ingested, _ = cli("ingest", str(EXAMPLE), "--data-dir", str(served.data_dir), *HASH)
    assert ingested.returncode == 0, ingested.stderr
    assert "HTTP Request" not in ingested.stderr
    loud, _ = cli("recall", QUERY, "--data-dir", str(served.data_dir), "--verbose")
    assert loud.returncode == 0 and "HTTP Request" in loud.stderr  # -v brings them back

    assert (served.data_dir / "server.json").exists()
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(30) == 0
    log = served.log.read_text(errors="replace")
    assert "POST /v1/events" in log and "POST /v1/recall" in log  # real work is logged
    assert "/v1/stats" not in log and "/v1/identity" not in log and "/healthz" not in log
    assert "schema 1 -> 2" not in log  # a fresh data dir has nothing to migrate
    assert not (served.data_dir / "server.json").exists()


def test_mcp_over_http_hands_off_without_a_key_of_its_own(served: Served) -> None:
    """``mcp --transport http --data-dir`` on a keyed, served dir forwards each caller's key
    (it has none itself: the hand-off finds the owner through the public ``/healthz``)."""
    from tests.e2e.test_mcp_http_auth import _calls

    dd = ["--data-dir", str(served.data_dir)]
    ingested, _ = cli("ingest", str(EXAMPLE), *dd, *HASH)
    assert ingested.returncode == 0, ingested.stderr
    made, _ = cli("keys", "create", "--tenant", "demo", "--role", "reader", *dd)
    key = made.stdout.strip().splitlines()[-1]
    wait_until(lambda: httpx.get(f"{served.url}/v1/stats").status_code == 401, timeout=10)
    port = free_port()
    with (served.log.parent / "mcp.log").open("wb") as log:
        proc = subprocess.Popen([*CLI, "mcp", "--transport", "http", "--port", str(port), *dd,
                                 *HASH], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                env=_env())
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            wait_until(lambda: _listening(url) or proc.poll() is not None, timeout=90,
                       interval=0.2)
            assert proc.poll() is None, (served.log.parent / "mcp.log").read_text()
            out = anyio.run(_calls, url, key)
            assert not out["own"].is_error and out["foreign"].is_error
            assert out["own"].structured_content["memories"]
        finally:
            proc.terminate()
            proc.wait(30)


def _listening(url: str) -> bool:
    try:
        httpx.get(url, timeout=1)
    except httpx.HTTPError:
        return False
    return True


def test_one_tenant_rule_without_user(served: Served) -> None:
    """No ``--user`` anywhere: import, recall, memory list and thread list all act for the
    key's own tenant (import used to write into 'local' while recall searched the key's
    tenant, so a new user's first recall found nothing)."""
    dd = ["--data-dir", str(served.data_dir)]
    made, _ = cli("keys", "create", "--tenant", "alice", "--role", "admin", *dd)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip().splitlines()[-1]
    wait_until(lambda: httpx.get(f"{served.url}/v1/stats").status_code == 401, timeout=10)
    who = httpx.get(f"{served.url}/v1/identity", headers={"Authorization": f"Bearer {key}"})
    assert who.json()["key"] == {"tenant": "alice", "role": "admin"}

    imported, _ = cli("import", str(CLAUDE), *dd, key=key)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["user_id"] == "alice"

    answer, _ = cli("recall", "the login rate limit", *dd, "--json", key=key)
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout)["memories"], answer.stdout
    listed, _ = cli("memory", "list", *dd, "--json", key=key)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["memories"], listed.stdout
    threads, _ = cli("thread", "list", *dd, "--json", key=key)
    assert threads.returncode == 0, threads.stderr
    assert "7f3c2a1e" in threads.stdout
    # erasing a whole tenant never takes it from a default
    refused, _ = cli("memory", "forget", "--tenant", "--yes", *dd, key=key)
    assert refused.returncode == 2
    assert "--user" in one_line(refused)

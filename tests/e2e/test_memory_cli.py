"""``breadcrumb memory list|versions|forget``, ``thread list|show`` and the recall flags
(issue 26), on an embedded data dir, as a user types them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BASE = [sys.executable, "-m", "breadcrumb.cli"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli") / "data"
    run("ingest", "examples/agent-session.jsonl", data=folder)
    return folder


def run(*argv: str, data: Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*BASE, *argv, "--data-dir", str(data), "--embedder", "hash"],
                          capture_output=True, text=True, timeout=300)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def test_list_pages_and_versions(data: Path) -> None:
    whole = json.loads(run("memory", "list", "--user", "demo", "--json", data=data).stdout)
    ids = [m["id"] for m in whole["memories"]]
    assert len(ids) >= 2 and whole["next_cursor"] is None
    first = json.loads(run("memory", "list", "--user", "demo", "--limit", "1", "--json",
                           data=data).stdout)
    rest = json.loads(run("memory", "list", "--user", "demo", "--limit", "50", "--cursor",
                          first["next_cursor"], "--json", data=data).stdout)
    assert [m["id"] for m in first["memories"] + rest["memories"]] == ids
    text = run("memory", "list", "--user", "demo", "--thread", "auth-refactor",
               data=data).stdout
    assert "auth-refactor [0.." in text and (ids[0] in text or ids[1] in text)
    versions = run("memory", "versions", ids[0], "--user", "demo", data=data).stdout
    assert versions.startswith("versions (oldest first):") and ids[0] in versions
    bad = run("memory", "list", "--user", "demo", "--cursor", "nope", data=data, ok=False)
    assert bad.returncode == 1 and "cursor" in bad.stderr and "Traceback" not in bad.stderr


def test_threads_and_a_range_verbatim(data: Path) -> None:
    threads = run("thread", "list", "--user", "demo", data=data).stdout
    assert "auth-refactor" in threads and "deploy-pipeline" in threads and "events" in threads
    shown = run("thread", "show", "auth-refactor", "--user", "demo", "--range", "3:4",
                data=data).stdout
    events = [json.loads(x) for x in Path("examples/agent-session.jsonl").read_text("utf-8")
              .splitlines() if x.strip() and json.loads(x)["thread_id"] == "auth-refactor"]
    assert shown.startswith("[3] ") and "\n[4] " in shown and "[5]" not in shown
    assert events[4]["content"] in shown  # verbatim
    full = json.loads(run("thread", "show", "auth-refactor", "--user", "demo", "--json",
                          data=data).stdout)
    assert [e["content"] for e in full["events"]] == [e["content"] for e in events]
    for bad in ("4:3", "x:1", "3"):
        refused = run("thread", "show", "auth-refactor", "--user", "demo", "--range", bad,
                      data=data, ok=False)
        assert refused.returncode == 2 and "--range" in refused.stderr


def test_recall_flags_and_ids(data: Path) -> None:
    text = run("recall", "nightly backup time", "--user", "demo", data=data).stdout
    assert "  id " in text
    brief = run("recall", "nightly backup", "--user", "demo", "--brief", "--thread",
                "deploy-pipeline", "--tag", "coding", "--include-superseded", data=data).stdout
    assert "deploy-pipeline#" in brief and "auth-refactor#" not in brief
    scoped = json.loads(run("recall", "email regex", "--user", "demo", "--thread",
                            "deploy-pipeline", "--json", data=data).stdout)
    assert {m["source_range"]["thread_id"] for m in scoped["memories"]} <= {"deploy-pipeline"}


def test_forget_asks_then_erases(data: Path) -> None:
    asked = run("memory", "forget", "--thread", "deploy-pipeline", "--user", "demo", data=data,
                ok=False)
    assert asked.returncode == 2 and "--yes" in asked.stderr
    both = run("memory", "forget", "x", "--tenant", "--user", "demo", "--yes", data=data,
               ok=False)
    assert both.returncode == 2
    done = run("memory", "forget", "--thread", "deploy-pipeline", "--user", "demo", "--yes",
               data=data)
    assert done.stdout.startswith("erased thread deploy-pipeline")
    left = json.loads(run("memory", "list", "--user", "demo", "--json", data=data).stdout)
    assert {m["source_range"]["thread_id"] for m in left["memories"]} == {"auth-refactor"}
    again = run("ingest", "examples/agent-session.jsonl", data=data, ok=False)
    assert "forgotten" in again.stdout
    after = json.loads(run("thread", "list", "--user", "demo", "--json", data=data).stdout)
    assert [t["thread_id"] for t in after["threads"]] == ["auth-refactor"]

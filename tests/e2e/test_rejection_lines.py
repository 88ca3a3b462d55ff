"""Every rejection ``ingest`` and ``import`` report names the 1-based line of the file it
came from (issue 24 item 5): never the 0-based index of an event in the batch sent.

The real CLI on the embedded default (hash embedder); events are refused by the
service's content limit (``BREADCRUMB_LIMIT_CONTENT_CHARS``), so the refusals come back
from intake with the contract's 0-based ``position`` and the CLI must map them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import EXAMPLE

CLI = [sys.executable, "-m", "breadcrumb.cli"]
LIMIT = 300
SESSION = "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5"


def _run(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BREADCRUMB_LIMIT_CONTENT_CHARS": str(LIMIT)}
    return subprocess.run([*CLI, *args, "--data-dir", str(data_dir), "--embedder", "hash"],
                          capture_output=True, text=True, timeout=300, check=False, env=env)


def _record(n: int, role: str, text: str) -> str:
    message: dict[str, Any] = {"role": role, "content": text if role == "user" else
                               [{"type": "text", "text": text}]}
    return json.dumps({"type": role, "message": message, "sessionId": SESSION,
                       "uuid": f"0b7d00{n:02d}-6c1a-4f2e-8d3b-5a9e7c1f2d{n:02d}",
                       "timestamp": f"2026-11-20T14:02:{n:02d}.000Z", "cwd": "/srv/app"})


def test_import_names_the_transcript_line_of_each_refused_event(tmp_path: Path) -> None:
    long_text = "LONG_VALUE=" + "x" * (LIMIT + 50)
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("\n".join([
        _record(1, "user", "Which port does the cache use?"),   # line 1
        "",                                                      # line 2
        "{oops",                                                 # line 3: not JSON
        _record(4, "assistant", long_text),                      # line 4: too long
        _record(5, "user", "And the queue?"),                    # line 5
        _record(6, "assistant", "QUEUE_PORT=5672"),              # line 6
        _record(7, "user", long_text),                           # line 7: too long
    ]) + "\n")
    done = _run("import", "--format", "claude-code", str(transcript), data_dir=tmp_path / "d")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    # 5 records, the settings note of the first (its cwd: line 1), the session_end
    assert report["events"] == 7 and report["accepted"] == 5
    rejected = report["rejected"]
    assert [r["line"] for r in rejected] == [3, 4, 7]
    assert "not JSON" in rejected[0]["error"]
    assert all("content" in r["error"] for r in rejected[1:]), rejected
    assert all("position" not in r for r in rejected)  # no second, 0-based numbering
    said = [s for s in done.stderr.splitlines() if s.startswith("breadcrumb import: ")]
    assert [s.split(":")[1].strip() for s in said] == [
        "line 3 of session.jsonl", "line 4 of session.jsonl", "line 7 of session.jsonl"], said


def test_import_of_a_folder_keeps_each_file_s_lines(tmp_path: Path) -> None:
    long_text = "y" * (LIMIT + 1)
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "a.jsonl").write_text(_record(1, "user", "short") + "\n"
                                    + _record(2, "user", long_text) + "\n")
    done = _run("import", "--format", "claude-code", str(folder), data_dir=tmp_path / "d")
    assert done.returncode == 1, done.stderr
    rejected = json.loads(done.stdout)["rejected"]
    assert [(Path(r["path"]).name, r["line"]) for r in rejected] == [("a.jsonl", 2)]


def test_ingest_names_file_lines_only(tmp_path: Path) -> None:
    lines = EXAMPLE.read_text("utf-8").splitlines()[:3]
    too_long = json.loads(lines[1])
    too_long["content"] = "z" * (LIMIT + 1)
    feed = tmp_path / "feed.jsonl"
    feed.write_text("\n".join([lines[0], "", "{oops", json.dumps(too_long), lines[2]]) + "\n")
    done = _run("ingest", str(feed), data_dir=tmp_path / "d")
    assert done.returncode == 1
    rejected = json.loads(done.stdout)["rejected"]
    assert [r["line"] for r in rejected] == [3, 4]
    assert all("position" not in r for r in rejected)
    said = [s for s in done.stderr.splitlines() if s.startswith("breadcrumb ingest: ")]
    assert said[0].startswith("breadcrumb ingest: line 3 of feed.jsonl: not JSON"), said
    assert said[1].startswith("breadcrumb ingest: line 4 of feed.jsonl: field 'content'"), said

"""``breadcrumb import`` of a folder mixing every agent's files, then ``recall`` of a patch line.

The folder holds the Gemini CLI (JSON and JSONL), OpenCode (export and SQLite store),
Cline / Roo, Copilot CLI, Cursor, SpecStory, Aider, Claude Code 2.1.2xx and Codex exec
fixtures; the embedded default stores them, a second import is all duplicates, and an
exact value that only a patch line of an edit holds comes back verbatim in the evidence.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.unit.test_importers_agents import FIXTURES, opencode_store

CLI = [sys.executable, "-m", "breadcrumb.cli"]
AGENTS = ("gemini", "cline", "copilot", "cursor", "specstory", "aider", "claude-code-2.1.2xx",
          "codex-0.14x-exec")


def _run(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args, "--data-dir", str(data_dir), "--embedder", "hash"],
                          capture_output=True, text=True, timeout=600, check=False)


def test_import_a_mixed_folder_then_recall_a_patch_line(tmp_path: Path) -> None:
    mixed = tmp_path / "sessions"
    for agent in AGENTS:
        shutil.copytree(FIXTURES / agent, mixed / agent)
    (mixed / "opencode").mkdir()
    opencode_store(mixed / "opencode")
    data = tmp_path / "data"
    imported = _run("import", str(mixed), "--user", "dev", data_dir=data)
    assert imported.returncode == 0, imported.stderr
    report = json.loads(imported.stdout)
    assert report["skipped_files"] == [] and report["rejected"] == []
    formats = {f["format"] for f in report["files"]}
    assert formats == {"gemini", "opencode", "cline", "copilot", "cursor", "specstory", "aider",
                       "claude-code", "codex"}
    assert report["accepted"] == report["events"] == sum(f["events"] for f in report["files"])
    assert report["unknown_records"] == 8  # each kept as a note, none dropped
    again = json.loads(_run("import", str(mixed), "--user", "dev", data_dir=data).stdout)
    assert (again["accepted"], again["duplicates"]) == (0, report["events"])

    recall = _run("recall", "which API timeout did we set in src/config.ts?", "--user", "dev",
                  "--json", data_dir=data)
    assert recall.returncode == 0, recall.stderr
    evidence = "\n".join(e["extracted_text"] for e in json.loads(recall.stdout)["evidence"])
    assert "export const API_TIMEOUT_MS = 15000" in evidence

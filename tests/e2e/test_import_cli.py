"""``breadcrumb import`` as a user runs it, on the embedded default, then ``recall``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.unit.test_importers import CLAUDE, CLAUDE_21_DIR, CLAUDE_21_ID, CODEX, CODEX_144

CLI = [sys.executable, "-m", "breadcrumb.cli"]


def _run(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args, "--data-dir", str(data_dir), "--embedder", "hash"],
                          capture_output=True, text=True, timeout=300, check=False)


def test_import_claude_code_then_recall_the_exact_value(tmp_path: Path) -> None:
    data = tmp_path / "data"
    imported = _run("import", "--format", "claude-code", str(CLAUDE), "--user", "dev",
                    data_dir=data)
    assert imported.returncode == 0, imported.stderr
    report = json.loads(imported.stdout)
    # 14 records' events, 2 settings notes (what the session runs with, its model), the end
    assert report["accepted"] == report["events"] == 17 and report["rejected"] == []
    assert report["thread_id"] == "7f3c2a1e-5b6d-4e8f-9a0b-1c2d3e4f5a6b"
    assert "17/17 events" in imported.stderr  # the progress bar

    again = _run("import", "--format", "claude-code", str(CLAUDE), "--user", "dev",
                 data_dir=data)
    assert json.loads(again.stdout)["duplicates"] == 17  # idempotent re-import

    recall = _run("recall", "which Redis URL keeps the login rate limit counters?",
                  "--user", "dev", "--json", data_dir=data)
    assert recall.returncode == 0, recall.stderr
    answer = json.loads(recall.stdout)
    assert answer["memories"][0]["source_range"]["thread_id"] == report["thread_id"]
    assert "redis://cache.internal:6380/2" in "\n".join(
        e["extracted_text"] for e in answer["evidence"])
    other = _run("recall", "Redis URL", "--user", "someone-else", "--json", data_dir=data)
    assert json.loads(other.stdout)["memories"] == []


def test_import_codex_with_explicit_thread_and_project(tmp_path: Path) -> None:
    data = tmp_path / "data"
    imported = _run("import", "--format", "codex", str(CODEX), "--user", "dev", "--project",
                    "inv", "--thread", "csv-fix", data_dir=data)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["thread_id"] == "csv-fix"
    recall = _run("recall", "what was the go test build failure in the CSV export?",
                  "--user", "dev", "--project", "inv", "--json", data_dir=data)
    answer = json.loads(recall.stdout)
    assert answer["memories"][0]["source_range"]["thread_id"] == "csv-fix"
    text = "\n".join(e["extracted_text"] for e in answer["evidence"])
    assert "undefined: csv" in text or "imported and not used" in text


def test_import_of_a_wrong_format_fails_clearly(tmp_path: Path) -> None:
    wrong = _run("import", "--format", "openai", str(CLAUDE), data_dir=tmp_path / "data")
    assert wrong.returncode == 2
    assert "breadcrumb import:" in wrong.stderr and "no openai transcript records" in wrong.stderr
    odd = tmp_path / "notes.jsonl"
    odd.write_text('{"hello": "world"}\n', "utf-8")
    unknown = _run("import", str(odd), data_dir=tmp_path / "data")
    assert unknown.returncode == 2 and "not a Claude Code, Codex or OpenAI" in unknown.stderr


def test_import_a_folder_then_a_renamed_copy_and_a_namesake(tmp_path: Path) -> None:
    data = tmp_path / "data"
    folder = _run("import", str(CLAUDE_21_DIR), "--user", "dev", data_dir=data)
    assert folder.returncode == 0, folder.stderr
    report = json.loads(folder.stdout)
    assert [(f["format"], f["events"], f["accepted"]) for f in report["files"]] == [
        ("claude-code", 9, 9), ("claude-code", 19, 19)]  # each with 2 settings notes
    assert report["files"][0]["threads"] == [f"{CLAUDE_21_ID}/agent-a3f9c1d"]
    assert report["accepted"] == 28 and report["skipped_files"] == []

    copies = tmp_path / "copies"
    (copies / "a").mkdir(parents=True)
    (copies / "a" / "rollout.jsonl").write_bytes(CODEX_144.read_bytes())
    first = json.loads(_run("import", str(copies / "a" / "rollout.jsonl"), "--user", "dev",
                            data_dir=data).stdout)
    assert first["accepted"] == first["events"] == 22  # 2 of them settings notes
    renamed = copies / "renamed.jsonl"
    renamed.write_bytes(CODEX_144.read_bytes())
    again = json.loads(_run("import", str(renamed), "--user", "dev", data_dir=data).stdout)
    assert (again["accepted"], again["duplicates"]) == (0, 22)  # a renamed copy adds nothing
    (copies / "b").mkdir()
    (copies / "b" / "rollout.jsonl").write_text(
        CODEX_144.read_text("utf-8").replace("019f3a61-2c7d", "019f3a61-0b0b"), "utf-8")
    namesake = json.loads(_run("import", str(copies / "b" / "rollout.jsonl"), "--user", "dev",
                               data_dir=data).stdout)
    assert (namesake["accepted"], namesake["duplicates"]) == (22, 0)  # both sessions land

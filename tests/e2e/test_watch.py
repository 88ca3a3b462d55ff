"""``breadcrumb watch`` against a running ``serve``: every record reaches it exactly once.

A session file grows line by line, its last line is torn for a while, the watcher is
restarted, the file is rotated with an unread tail, and the session goes idle: the
service ends up with each event of the session once, and the watcher never sent an event
the service already had (the sink's duplicate count stays 0).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from breadcrumb.importers import ImportOptions, import_file
from breadcrumb.sdk import Breadcrumb
from breadcrumb.watch import SdkSink, Watcher
from tests.support.serve import CLI, serving
from tests.unit.test_importers import CLAUDE_21, CLAUDE_21_ID, CODEX_144

USER = "watcher"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("watch")) as url:
        yield url


def _stored(url: str, thread: str) -> list[str]:
    events = httpx.get(f"{url}/v1/threads/{thread}/events",
                       params={"user_id": USER, "start": 0, "end": 999}).json()
    return [e["event_id"] for e in events]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_growing_torn_restarted_rotated_and_idle(server: str, tmp_path: Path) -> None:
    lines = CLAUDE_21.read_bytes().splitlines(keepends=True)
    folder, state = tmp_path / "projects" / "-home-rui-src-orders-api", tmp_path / "state.json"
    folder.mkdir(parents=True)
    live = folder / f"{CLAUDE_21_ID}.jsonl"
    clock = Clock()
    with Breadcrumb(url=server, user_id=USER) as bc:
        sink = SdkSink(bc)

        def watcher() -> Watcher:
            return Watcher([tmp_path / "projects"], sink, state, user_id=USER,
                           idle_end_seconds=60, clock=clock)

        first = watcher()
        live.write_bytes(b"".join(lines[:3]))
        # the snapshot record is skipped; the prompt sent, after the settings note its
        # record names (version, cwd, branch), then the model the next (a thinking block) names
        assert first.poll_once() == 3
        for line in lines[3:6]:  # growing line by line
            with live.open("ab") as fh:
                fh.write(line)
            first.poll_once()
        with live.open("ab") as fh:  # a torn last line: half of it for now
            fh.write(lines[6][:40])
        assert first.poll_once() == 0
        with live.open("ab") as fh:
            fh.write(lines[6][40:])
        assert first.poll_once() >= 1

        restarted = watcher()  # a new process: the saved position is the start
        assert restarted.poll_once() == 0
        with live.open("ab") as fh:
            fh.write(b"".join(lines[7:12]))  # written, then rotated before a pass
        live.rename(folder / f"{CLAUDE_21_ID}.jsonl.1")
        live.write_bytes(b"".join(lines[12:]))
        restarted.poll_once()
        assert restarted.poll_once() == 0

        clock.now += 61  # the session went quiet: session_end and a flush, once
        restarted.poll_once()
        assert restarted.stats.sessions_ended == 2  # the rotated file and the new one
        assert restarted.poll_once() == 0
        bc.wait_processed(120)
    want = [e["event_id"] for e in import_file(CLAUDE_21, "auto", ImportOptions(USER)).events]
    got = _stored(server, CLAUDE_21_ID)
    assert len(got) == len(set(got))
    assert set(want) <= set(got)  # every record once (plus the rotated file's session_end)
    assert sink.duplicates == 0  # nothing was ever sent twice
    assert json.loads(state.read_text())  # the position survives on disk


def test_the_command_publishes_a_folder_once(server: str, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions" / "2026" / "11" / "18"
    sessions.mkdir(parents=True)
    (sessions / "rollout-2026-11-18T10-12-00-019f3a61.jsonl").write_bytes(CODEX_144.read_bytes())
    args = [*CLI, "watch", str(tmp_path / "sessions"), "--url", server, "--user", USER,
            "--state", str(tmp_path / "state.json"), "--once"]
    first = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert first.returncode == 0, first.stderr
    # all but the session_end (two of them the settings notes: the session's, its model's)
    assert json.loads(first.stdout)["events_sent"] == 21
    again = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert json.loads(again.stdout)["events_sent"] == 0

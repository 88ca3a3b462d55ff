"""``watch`` over the other agents' files: watch, stop, append, watch again → each event once.

The sink is a list (the service side is covered by tests/e2e/test_watch.py); what counts
here is that the watcher sends every event of a session exactly once across restarts,
for files that grow by lines (Gemini JSONL), are rewritten whole (a Cline task history),
are an SQLite store updated in place (OpenCode) or a markdown file appended to (aider).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from breadcrumb.importers import ImportOptions, import_path
from breadcrumb.watch import DEFAULT_FOLDERS, Watcher
from tests.unit.test_importers_agents import (
    AIDER,
    CLINE,
    GEMINI_ID,
    GEMINI_JSONL,
    GEMINI_SUB,
    OPENCODE_SQL,
)

USER = "watcher"


class ListSink:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.flushed: list[str] = []

    def send(self, events: list[dict[str, Any]]) -> None:
        self.events += events

    def flush(self, user_id: str, thread_id: str) -> None:
        self.flushed.append(thread_id)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _watcher(folder: Path, sink: ListSink, clock: Clock) -> Watcher:
    return Watcher([folder], sink, folder.parent / "state.json", user_id=USER,
                   idle_end_seconds=60, clock=clock)


def _ids(events: list[dict[str, Any]]) -> list[str]:
    return [e["event_id"] for e in events]


def _want(path: Path) -> list[str]:
    return sorted(e["event_id"] for r in import_path(path, "auto", ImportOptions(USER))
                  for e in r.events)


def _run(folder: Path, writes: list[Any], final: Path) -> ListSink:
    """Each write, then a pass by a new watcher (a restart); then the sessions go idle."""
    sink, clock = ListSink(), Clock()
    for write in writes:
        write()
        watcher = _watcher(folder, sink, clock)
        watcher.poll_once()
        assert watcher.poll_once() == 0  # nothing new: nothing sent
    clock.now += 61
    watcher = _watcher(folder, sink, clock)
    watcher.poll_once()
    assert watcher.poll_once() == 0
    assert len(_ids(sink.events)) == len(set(_ids(sink.events)))  # each event once
    assert sorted(_ids(sink.events)) == _want(final)  # and all of them, session ends too
    return sink


def test_gemini_jsonl_grows_and_restarts(tmp_path: Path) -> None:
    chats = tmp_path / "tmp" / "reports" / "chats"
    (chats / GEMINI_ID).mkdir(parents=True)
    # Gemini CLI's project folder names its root beside the chats, as the fixture's does
    (chats.parent / ".project_root").write_bytes(
        (GEMINI_JSONL.parent.parent / ".project_root").read_bytes())
    live = chats / GEMINI_JSONL.name
    lines = GEMINI_JSONL.read_bytes().splitlines(keepends=True)

    def part(lo: int, hi: int) -> Any:
        def write() -> None:
            with live.open("ab") as fh:
                fh.write(b"".join(lines[lo:hi]))
        return write

    def torn() -> None:
        with live.open("ab") as fh:
            fh.write(lines[4][:30])  # half a line: waits for its newline

    def rest() -> None:
        with live.open("ab") as fh:
            fh.write(lines[4][30:] + b"".join(lines[5:]))

    sink = _run(tmp_path / "tmp", [part(0, 4), torn, rest], GEMINI_JSONL)
    results = [e for e in sink.events if e["kind"] == "tool_result"]
    assert len(results) == 2  # the message re-appended with its result adds the result only
    sub = chats / GEMINI_ID / GEMINI_SUB.name
    sub.write_bytes(GEMINI_SUB.read_bytes())
    watcher = _watcher(tmp_path / "tmp", sink, Clock())
    assert watcher.poll_once() == 6  # its 4 events and 2 settings notes (cwd, model)
    assert {e["attrs"]["parent_thread_id"] for e in sink.events[-6:]} == {GEMINI_ID}


def test_a_cline_history_rewritten_whole(tmp_path: Path) -> None:
    task = tmp_path / "tasks" / "1733221234567"
    task.mkdir(parents=True)
    messages = json.loads(CLINE.read_text("utf-8"))
    history = task / "api_conversation_history.json"
    ui = CLINE.with_name("ui_messages.json")  # the task's id; not read itself
    (task / ui.name).write_bytes(ui.read_bytes())

    def upto(count: int) -> Any:
        return lambda: history.write_text(json.dumps(messages[:count]), "utf-8")

    _run(tmp_path / "tasks", [upto(3), upto(5), upto(len(messages))], CLINE)


def test_an_opencode_store_updated_in_place(tmp_path: Path) -> None:
    store_dir = tmp_path / "opencode"
    store_dir.mkdir()
    store = store_dir / "opencode.db"
    sql = OPENCODE_SQL.read_text("utf-8").splitlines()
    schema = [line for line in sql if not line.startswith("INSERT INTO part")]
    parts = [line for line in sql if line.startswith("INSERT INTO part")]
    bash = next(p for p in parts if "prt_a1b2c3d4e006" in p)

    def first() -> None:
        with sqlite3.connect(store) as db:
            db.executescript("\n".join(schema + parts[:4]))
            running = bash.replace('"status":"completed"', '"status":"running"')
            db.executescript(running)  # the bash call is still running

    def finished() -> None:
        with sqlite3.connect(store) as db:
            db.execute("DELETE FROM part WHERE id = 'prt_a1b2c3d4e006'")
            db.executescript("\n".join(p for p in parts[4:]))

    final = tmp_path / "final.db"
    with sqlite3.connect(final) as db:
        db.executescript(OPENCODE_SQL.read_text("utf-8"))
    sink = _run(store_dir, [first, finished], final)
    kinds = [e["kind"] for e in sink.events if e.get("tool") == "bash"]
    assert kinds[:2] == ["tool_call", "test_result"]


def test_an_aider_history_appended_across_restarts(tmp_path: Path) -> None:
    repo = tmp_path / "weather-cli"
    repo.mkdir()
    history = repo / ".aider.chat.history.md"
    text = AIDER.read_text("utf-8")
    cut = text.index("#### /run pytest -q")

    def start() -> None:
        history.write_text(text[:cut], "utf-8")

    def rest() -> None:
        with history.open("a", encoding="utf-8") as fh:
            fh.write(text[cut:])

    sink = _run(tmp_path, [start, rest], AIDER)
    assert len(sink.flushed) == 2  # both sessions of the file ended and flushed


def test_a_state_from_an_older_watcher_is_not_sent_again(tmp_path: Path) -> None:
    folder = tmp_path / "chats"
    folder.mkdir()
    (folder / GEMINI_JSONL.name).write_bytes(GEMINI_JSONL.read_bytes())
    sink, clock = ListSink(), Clock()
    _watcher(folder, sink, clock).poll_once()
    state = json.loads((tmp_path / "state.json").read_text())
    for entry in state["files"].values():  # what an older watcher saved: counts only
        del entry["sent_ids"], entry["signature"]
        entry["consumed"] = 0
    (tmp_path / "state.json").write_text(json.dumps(state))
    assert _watcher(folder, sink, clock).poll_once() == 0


def test_default_folders_name_every_agent() -> None:
    joined = " ".join(DEFAULT_FOLDERS)
    for where in ("~/.claude/projects", "~/.codex/sessions", "~/.gemini/tmp",
                  "~/.copilot/session-state", "~/.cursor/projects", "~/.local/share/opencode",
                  "saoudrizwan.claude-dev/tasks", "rooveterinaryinc.roo-cline/tasks"):
        assert where in joined

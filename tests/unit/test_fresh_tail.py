"""Fresh tail: which open windows a tenant's recall reads (one function, no stores)."""

from __future__ import annotations

from typing import Any

from breadcrumb.query_api.recall.sources import MAX_WINDOWS, open_windows
from breadcrumb.query_api.recall.stages import OpenWindow


def _state(user: str, thread: str, project: str | None, indices: list[int],
           ts: str = "2026-01-01T00:00:00Z") -> tuple[str, dict[str, Any]]:
    pending = [[i, f"{user}-{thread}-{i}", 5, "message", ts] for i in indices]
    return f"{user}/{thread}", {"user_id": user, "thread_id": thread, "project_id": project,
                                "next_index": max(indices, default=-1) + 1, "pending": pending}


def test_only_the_tenants_open_windows_with_their_ranges() -> None:
    states = [_state("u1", "a", "p", [3, 4, 5]), _state("u2", "a", "p", [0, 1]),
              _state("u1", "b", "q", []), _state("u1", "c", "q", [7])]
    got = open_windows(states, "u1")
    assert {(w.thread_id, w.start, w.end) for w in got} == {("a", 3, 5), ("c", 7, 7)}
    assert all(isinstance(w, OpenWindow) and w.user_id == "u1" for w in got)
    assert [w.thread_id for w in open_windows(states, "u1", project_id="q")] == ["c"]
    assert [w.thread_id for w in open_windows(states, "u1", thread_id="a")] == ["a"]
    assert open_windows(states, "u3") == []


def test_most_recently_active_windows_first_and_bounded() -> None:
    states = [_state("u1", f"t{i:03d}", None, [0], f"2026-01-01T00:{i % 60:02d}:{i // 60:02d}Z")
              for i in range(MAX_WINDOWS + 10)]
    got = open_windows(states, "u1")
    assert len(got) == MAX_WINDOWS
    assert [w.last_ts for w in got] == sorted((w.last_ts for w in got), reverse=True)


def test_a_tag_filter_excludes_the_fresh_tail() -> None:
    from breadcrumb.query_api.models import RecallRequest
    from breadcrumb.query_api.recall.sources import Sources

    class States:
        def list_open_states(self, user_id: str) -> list[tuple[str, dict[str, Any]]]:
            raise AssertionError("a tag-filtered recall must not read open windows")

    sources = Sources(None, None, None, States())  # type: ignore[arg-type]
    req = RecallRequest(user_id="u1", query="DB_PORT", tags=["db"])
    assert sources.open_window_events(req) == []

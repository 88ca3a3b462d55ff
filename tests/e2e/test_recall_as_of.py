"""Recall in time (``as_of``): a value changed twice answers the middle one for a date
between the changes, a memory said after ``as_of`` never appears, and both hold after a
replay (embedded SQLite + Qdrant Edge)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from breadcrumb.infra.embedded import replay
from tests.support.clients import drain, hash_client

ASK = "which DB_PORT does the database use?"


def _ev(i: int, thread: str, day: int, kind: str, content: str, **attrs: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "event_id": f"{thread}-{i}", "user_id": "u1", "project_id": "shop", "thread_id": thread,
        "ts": f"2026-{day // 100:02d}-{day % 100:02d}T10:{i:02d}:00Z", "role": "assistant",
        "kind": kind, "content": content}
    if attrs:
        event["attrs"] = attrs
    return event


def _session(thread: str, day: int, note: str, edit: str) -> list[dict[str, Any]]:
    return [_ev(0, thread, day, "message", note),
            _ev(1, thread, day, "file_edit", edit, path=".env"),
            _ev(2, thread, day, "session_end", "end")]


def history() -> list[dict[str, Any]]:
    """DB_PORT 5432 (Mar 2) -> 6432 (Mar 9) -> 7432 (Mar 16); a cron said on Mar 20."""
    return (_session("db-setup", 302, "Set up the database connection settings.",
                     "+DB_PORT=5432")
            + _session("pgbouncer", 309, "Route the database through pgbouncer.",
                       "+DB_PORT=6432")
            + _session("proxy", 316, "Move the database behind the new proxy.", "+DB_PORT=7432")
            + _session("backup", 320, "Schedule the nightly backup job.",
                       "+BACKUP_CRON=0 3 * * *"))


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    with hash_client(tmp_path) as http:
        http.post("/v1/events", json={"events": history()})
        drain(http, timeout=120)
        yield http


def recall(client: httpx.Client, **body: Any) -> dict[str, Any]:
    r = client.post("/v1/recall", json={"user_id": "u1", "query": ASK, "k": 5, **body})
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


def text(answer: dict[str, Any]) -> str:
    return "\n".join(e["extracted_text"] for e in answer["evidence"])


def check_in_time(client: httpx.Client) -> None:
    """The checks both modes (and a replayed generation) must pass."""
    now = text(recall(client))
    assert "DB_PORT=7432" in now and "5432" not in now and "6432" not in now
    between = recall(client, as_of="2026-03-12T00:00:00Z")
    assert "DB_PORT=6432" in text(between)
    assert "7432" not in text(between) and "5432" not in text(between)
    assert [m["status"] for m in between["memories"] if "pgbouncer" in m["summary"]] == [
        "active"]
    first = text(recall(client, as_of="2026-03-05T00:00:00+00:00"))
    assert "DB_PORT=5432" in first and "6432" not in first
    for m in between["memories"]:  # nothing said after as_of
        assert m["created_at"] <= "2026-03-12"
    for e in between["evidence"]:  # every line dated, none said after as_of
        assert all(ts <= "2026-03-12" for ts in e["event_ts"].values())
        assert e["lines"] and all(line["ts"] <= "2026-03-12" for line in e["lines"])
    cron = recall(client, query="what is the BACKUP_CRON schedule?",
                  as_of="2026-03-18T00:00:00Z")
    assert "0 3 * * *" not in text(cron)
    assert all("backup" not in m["summary"].lower() for m in cron["memories"])
    assert "0 3 * * *" in text(recall(client, query="what is the BACKUP_CRON schedule?"))


def test_value_changed_twice_answers_the_middle_one_then(client: TestClient) -> None:
    check_in_time(client)


def test_history_in_time_is_dated(client: TestClient) -> None:
    today = recall(client, include_superseded=True)
    assert "DB_PORT=7432" in today["evidence"][0]["extracted_text"]  # current first
    assert "superseded" not in today["evidence"][0]
    answer = recall(client, include_superseded=True, as_of="2026-03-12T00:00:00Z")
    assert "DB_PORT=6432" in text(answer) and "DB_PORT=5432" in text(answer)
    assert "7432" not in text(answer)
    first = answer["evidence"][0]
    assert "DB_PORT=6432" in first["extracted_text"]  # the value current then, first
    old = [e for e in answer["evidence"] if "DB_PORT=5432" in e["extracted_text"]]
    assert old and old[0]["superseded_values"] == ["5432"]
    assert old[0]["superseded"][0]["new_value"] == "6432"
    assert old[0]["superseded"][0]["superseded_at"].startswith("2026-03-09")
    assert old[0]["ts"].startswith("2026-03-02")


def test_as_of_survives_a_replay(client: TestClient) -> None:
    replay(client.app.state.runtime, "g1")  # type: ignore[attr-defined]
    check_in_time(client)


def test_future_as_of_filters_nothing(client: TestClient) -> None:
    plain = recall(client)
    later = recall(client, as_of="2999-01-01T00:00:00Z")
    assert text(later) == text(plain)
    assert [m["id"] for m in later["memories"]] == [m["id"] for m in plain["memories"]]


@pytest.mark.parametrize(("field", "value"), [
    ("as_of", "2026-13-40"), ("as_of", "yesterday"), ("now", "not a time"), ("now", 1.5e20),
    ("as_of", ""), ("now", []),
])
def test_a_malformed_time_is_a_422_with_the_reason(client: TestClient, field: str,
                                                   value: Any) -> None:
    r = client.post("/v1/recall", json={"user_id": "u1", "query": ASK, field: value})
    assert r.status_code == 422, r.text
    assert field in r.json()["error"]["message"]

"""Issue 12, hardened input: every hostile body answers 4xx naming the field, before
anything is acknowledged; never a 500, never an event acknowledged and then lost."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.app import create_app
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from tests.conftest import wait_until
from tests.support.clients import hash_client

JSON = {"content-type": "application/json"}
BIG = 2**63


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    with hash_client(tmp_path, raise_server_exceptions=False,
                     limit_body_bytes=256 * 1024, limit_batch_events=50,
                     limit_content_chars=10_000, limit_page_events=5, limit_tags=8) as http:
        yield http


def event(i: int = 0, **extra: Any) -> dict[str, Any]:
    base = {"event_id": f"e{i}", "user_id": "u1", "thread_id": "t1",
            "ts": "2026-01-01T00:00:00Z", "role": "user", "kind": "message",
            "content": f"hello {i}"}
    return {**base, **extra}


def post_raw(client: TestClient, path: str, text: str) -> Any:
    return client.post(path, content=text.encode("utf-8"), headers=JSON)


def events_text(fragment: str, **extra: Any) -> str:
    """A one-event body whose attrs are the raw JSON ``fragment`` (NaN, 2**64, ...)."""
    head = json.dumps(event(**extra))[:-1]
    return '{"events": [' + head + ', "attrs": {"x": ' + fragment + "}}]}"


def error_of(response: Any) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    return str(body["error"]["message"])


def stats(client: TestClient) -> dict[str, Any]:
    out: dict[str, Any] = client.get("/v1/stats").json()
    return out


# --- lone surrogates ----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "field"), [
    ('{"events": [' + json.dumps(event())[:-1] + ', "content": "x\\ud800"}]}', "content"),
    (events_text('"x\\udfff"'), "attrs.x"),
    (events_text('{"k\\ud800": 1}'), "attrs.x"),
    ('{"events": [' + json.dumps(event())[:-1] + ', "thread_id": "\\ud800"}]}', "thread_id"),
])
def test_lone_surrogates_in_events_answer_422_naming_the_field(
        client: TestClient, text: str, field: str) -> None:
    response = post_raw(client, "/v1/events", text)
    assert response.status_code == 422, response.text
    assert f"events.0.{field}" in error_of(response)
    assert stats(client)["events_received"] == 0


def test_lone_surrogate_in_a_recall_query_answers_422(client: TestClient) -> None:
    response = post_raw(client, "/v1/recall", '{"user_id": "u1", "query": "x\\ud800"}')
    assert response.status_code == 422, response.text
    assert "query" in error_of(response)


def test_escaped_surrogate_pairs_are_fine(client: TestClient) -> None:
    text = '{"events": [' + json.dumps(event())[:-1] + ', "content": "ok \\ud83d\\ude00"}]}'
    response = post_raw(client, "/v1/events", text)
    assert response.status_code == 202, response.text


# --- integers, non-finite numbers, nesting --------------------------------------------------

@pytest.mark.parametrize("fragment", [str(2**64), str(-(2**64)), str(BIG)])
def test_integers_beyond_64_bits_in_attrs_answer_422(client: TestClient, fragment: str) -> None:
    response = post_raw(client, "/v1/events", events_text(fragment))
    assert response.status_code == 422, response.text
    assert "events.0.attrs.x" in error_of(response)


@pytest.mark.parametrize("name", ["index", "tokens"])
def test_index_of_2_63_is_refused_not_acknowledged(client: TestClient, name: str) -> None:
    response = client.post("/v1/events", json={"events": [event(**{name: BIG})]})
    assert response.status_code == 422, response.text
    assert name in error_of(response)
    wait_until(lambda: stats(client)["pending"] == 0)
    assert stats(client)["events_accepted"] == 0


def test_index_of_2_63_in_process_is_refused_and_replay_still_works(tmp_path: Path) -> None:
    """The in-process gateway (CLI ingest, importers) refuses it too, and replay runs."""
    settings = Settings(data_dir=tmp_path / "data", embedder="hash")
    runtime = build_runtime(settings, embedder=HashEmbedder())
    with TestClient(create_app(runtime), raise_server_exceptions=False) as http:
        result = runtime.gateway.submit([event(0), event(1, index=BIG)], "cli")
        assert result.accepted == 1 and result.rejected[0]["position"] == 1
        assert "index" in result.rejected[0]["error"]
        hostile = [event(5, content="x\ud800"), event(6, attrs={"n": 2**80}),
                   event(7, attrs={"f": float("nan")})]
        refused = runtime.gateway.submit(hostile, "cli")
        assert refused.accepted == 0 and len(refused.rejected) == 3
        assert stats(http)["dead_letters"] == 4  # kept, with their reasons
        wait_until(lambda: stats(http)["unprocessed"] == 0)
        assert stats(http)["events_processed"] == 1
        started = http.post("/v1/admin/replay", json={"name": "after"}, headers=JSON)
        assert started.status_code in (200, 202), started.text
        wait_until(lambda: http.get("/v1/admin/replay").json()["state"] in ("done", "failed"),
                   timeout=60)
        assert http.get("/v1/admin/replay").json()["state"] == "done"


@pytest.mark.parametrize("path_and_body", [
    ("/v1/recall_source", {"user_id": "u1", "source_thread_id": "t1", "source_start_index": 0,
                           "source_end_index": BIG, "query": "q"}),
    ("/v1/recall_source", {"user_id": "u1", "source_thread_id": "t1", "source_start_index": 0,
                           "source_end_index": 2**70, "query": "q"}),
    ("/v1/recall", {"user_id": "u1", "query": "q", "k": 2**70}),
])
def test_huge_integers_in_request_models_answer_422(
        client: TestClient, path_and_body: tuple[str, dict[str, Any]]) -> None:
    path, body = path_and_body
    response = post_raw(client, path, json.dumps(body))
    assert response.status_code == 422, response.text


@pytest.mark.parametrize("fragment", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_answer_422_and_are_not_stored(
        client: TestClient, fragment: str) -> None:
    response = post_raw(client, "/v1/events", events_text(fragment))
    assert response.status_code == 422, response.text
    assert "events.0.attrs.x" in error_of(response)
    assert stats(client)["events_received"] == 0


@pytest.mark.parametrize("depth", [40, 300, 5000])
def test_deep_nesting_answers_422(client: TestClient, depth: int) -> None:
    response = post_raw(client, "/v1/events", events_text("[" * depth + "]" * depth))
    assert response.status_code == 422, response.text
    assert "nest" in error_of(response)


def test_attrs_deeper_than_the_setting_answer_422_naming_attrs(client: TestClient) -> None:
    deep: Any = 1
    for _ in range(20):  # limit_attrs_depth is 16, the whole body stays under 32
        deep = {"a": deep}
    response = client.post("/v1/events", json={"events": [event(attrs={"d": deep})]})
    assert response.status_code == 422, response.text
    assert "attrs" in error_of(response)


# --- sizes ----------------------------------------------------------------------------------

def test_a_body_over_the_limit_answers_413(client: TestClient) -> None:
    filler = "x" * (300 * 1024)
    response = client.post("/v1/events", json={"events": [event(content=filler)]})
    assert response.status_code == 413, response.text
    assert "body" in error_of(response)


def test_a_chunked_body_over_the_limit_answers_413(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"events": [{"content": "'
        for _ in range(64):
            yield b"x" * 8192
        yield b'"}]}'

    response = client.post("/v1/events", content=chunks(), headers=JSON)
    assert response.status_code == 413, response.text


def test_too_many_events_per_batch_answer_413(client: TestClient) -> None:
    response = client.post("/v1/events", json={"events": [event(i) for i in range(51)]})
    assert response.status_code == 413, response.text
    assert "events" in error_of(response)


def test_content_over_the_limit_answers_422_naming_content(client: TestClient) -> None:
    response = client.post("/v1/events", json={"events": [event(content="y" * 10_001)]})
    assert response.status_code == 422, response.text
    assert "content" in error_of(response)


@pytest.mark.parametrize(("body", "field"), [
    ({"user_id": "u1", "query": "q", "thread_id": "t" * 100_000}, "thread_id"),
    ({"user_id": "u1", "query": "q", "tags": [f"t{i}" for i in range(10_000)]}, "tags"),
    ({"user_id": "u1", "query": "q", "tags": ["t" * 1000]}, "tags"),
    ({"user_id": "u1", "query": "q", "project_id": "p" * 1000}, "project_id"),
])
def test_recall_string_and_tag_limits_answer_4xx_naming_the_field(
        client: TestClient, body: dict[str, Any], field: str) -> None:
    response = client.post("/v1/recall", json=body)
    assert response.status_code in (413, 422), response.text
    assert field in error_of(response)


def test_too_many_tags_is_refused_even_under_the_body_limit(client: TestClient) -> None:
    response = client.post("/v1/recall", json={"user_id": "u1", "query": "q",
                                               "tags": [f"t{i}" for i in range(9)]})
    assert response.status_code == 422, response.text
    assert "tags" in error_of(response)


# --- paging ---------------------------------------------------------------------------------

def test_thread_paging_says_when_there_is_more(client: TestClient) -> None:
    assert client.post("/v1/events", json={"events": [event(i) for i in range(12)]}
                       ).status_code == 202
    wait_until(lambda: stats(client)["unprocessed"] == 0)
    first = client.get("/v1/threads/t1/events", params={"user_id": "u1"})
    assert first.status_code == 200
    assert [e["index"] for e in first.json()] == [0, 1, 2, 3, 4]
    assert first.headers["x-has-more"] == "true" and first.headers["x-next-start"] == "5"
    paged = client.get("/v1/threads/t1/events",
                       params={"user_id": "u1", "start": 10, "paged": "true"}).json()
    assert [e["index"] for e in paged["events"]] == [10, 11]
    assert paged["has_more"] is False and paged["next_start"] is None
    seen: list[int] = []
    start: int | None = 0
    for _ in range(10):
        if start is None:
            break
        page = client.get("/v1/threads/t1/events",
                          params={"user_id": "u1", "start": start, "paged": "true"}).json()
        seen += [e["index"] for e in page["events"]]
        start = page["next_start"]
    assert seen == list(range(12))
    bounded = client.get("/v1/threads/t1/events", params={"user_id": "u1", "start": 0, "end": 3})
    assert len(bounded.json()) == 4 and bounded.headers["x-has-more"] == "false"


@pytest.mark.parametrize("params", [
    {"start": -5}, {"start": 0, "end": -1}, {"end": BIG}, {"start": 2**70}, {"limit": 0},
    {"limit": 6}, {"start": 3, "end": 1},
])
def test_thread_paging_refuses_bad_ranges(client: TestClient, params: dict[str, Any]) -> None:
    response = client.get("/v1/threads/t1/events", params={"user_id": "u1", **params})
    assert response.status_code == 422, response.text
    error_of(response)


# --- safety net -----------------------------------------------------------------------------

def test_an_unexpected_error_answers_a_json_500(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedder="hash")
    app = create_app(build_runtime(settings, embedder=HashEmbedder()), manage_lifecycle=False)

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("secret detail")

    with TestClient(app, raise_server_exceptions=False) as http:
        response = http.get("/boom")
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "internal_error"
    assert "secret detail" not in response.text


def test_an_old_log_holding_index_2_63_is_dead_lettered_once_and_replay_completes(
        tmp_path: Path) -> None:
    """A data dir written before the intake refused it: the processor keeps the entry as a
    dead letter with its reason (no retry loop), and every replay still finishes."""
    settings = Settings(data_dir=tmp_path / "data", embedder="hash")
    runtime = build_runtime(settings, embedder=HashEmbedder())
    log_store: Any = runtime.gateway.store  # type: ignore[attr-defined]
    poison = json.dumps(event(1, index=BIG))
    log_store.log.append_log([("u1", "e0", "u1/t1", json.dumps(event(0))),
                          ("u1", "e1", "u1/t1", poison),
                          ("u1", "e2", "u1/t1", json.dumps(event(2)))])
    with TestClient(create_app(runtime), raise_server_exceptions=False) as http:
        wait_until(lambda: stats(http)["unprocessed"] == 0, timeout=60)
        assert stats(http)["dead_letters"] == 1
        assert stats(http).get("processor_errors", 0) == 0
        for name in ("again1", "again2"):
            assert http.post("/v1/admin/replay", json={"name": name},
                             headers=JSON).status_code == 202
            wait_until(lambda: http.get("/v1/admin/replay").json()["state"] in ("done", "failed"),
                       timeout=60)
            assert http.get("/v1/admin/replay").json()["state"] == "done"
        indices = [e["index"] for e in http.get("/v1/threads/t1/events",
                                                params={"user_id": "u1"}).json()]
        assert indices == [0, 1]

"""The LLM observer and ChatClient against a real HTTP stub of /v1/chat/completions."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from breadcrumb.eval.corpus import FAILING_NODE, big_pytest_log
from breadcrumb.infra.bootstrap import build_observer
from breadcrumb.processors.observer import ObserverConfig, observe
from breadcrumb.settings import Settings
from breadcrumb.stores.llm.chat import ChatClient, LLMError
from breadcrumb.stores.llm.observer import LLMObserver, build_llm_observer
from breadcrumb.topics.records import ClosedRange, Event, SourceRange
from tests.conftest import example_events


@dataclass
class Reply:
    """One scripted answer: HTTP status, body (dict → JSON, str → raw) and a delay."""

    status: int = 200
    content: str | None = None  # the assistant message content (status 200)
    body: Any = None  # a raw body instead (errors)
    delay: float = 0.0


@dataclass
class Stub:
    url: str
    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    reject_response_format: bool = False


def _completion(content: str) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            stub.requests.append(body)
            if self.path != "/v1/chat/completions":
                return self._send(404, {"error": {"message": "no route"}})
            if stub.reject_response_format and "response_format" in body:
                return self._send(400, {"error": {"message": "response_format unsupported"}})
            reply = stub.replies.pop(0) if stub.replies else Reply(500, body={"error": {}})
            time.sleep(reply.delay)
            if reply.status != 200:
                return self._send(reply.status, reply.body or {"error": {"message": "boom"}})
            self._send(200, _completion(reply.content or ""))

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and went away: that is the test

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture()
def stub() -> Iterator[Stub]:
    holder = Stub(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(holder))
    server.daemon_threads = True
    holder.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield holder
    server.shutdown()
    server.server_close()


def _range(thread: str = "auth-refactor") -> tuple[list[Event], ClosedRange]:
    raw = [e for e in example_events() if e["thread_id"] == thread]
    events = [Event.from_dict(e).with_index(i, 10) for i, e in enumerate(raw)]
    closed = ClosedRange("demo", None, SourceRange(thread, 0, len(events) - 1),
                         tuple(e.event_id for e in events), "session_end")
    return events, closed


def _observer(stub: Stub, sleeps: list[float] | None = None, **kw: Any) -> LLMObserver:
    client = ChatClient(stub.url, "key", "stub-model", max_retries=kw.pop("max_retries", 2),
                        sleep=(sleeps if sleeps is not None else []).append, **kw)
    return LLMObserver(client)


GOOD = {
    "summary": "Fixed sign-up email validation: EMAIL_RE now needs a dot and a TLD.",
    "tags": ["Email Validation", "auth"],
    "query_hints": ["AUTH_ALLOWED_DOMAINS", "email validation rule", "MAX_EMAIL_LEN=254",
                    "src/auth/validate-email.ts"],
    "retrieve_when": "When asked about the sign-up email regex or allowed domains.",
    "importance": 0.9,
    "kind": "decision",
}


def test_valid_output_is_merged_and_exact_hints_kept(stub: Stub) -> None:
    stub.replies = [Reply(content=json.dumps(GOOD))]
    events, closed = _range()
    observer = _observer(stub)
    got = observer(events, closed)
    base = observe(events, closed, ObserverConfig())
    assert got.summary == GOOD["summary"] and got.kind == "decision" and got.importance == 0.9
    assert got.query_hints[: len(base.query_hints)] == base.query_hints  # none dropped
    assert "email validation rule" in got.query_hints  # a phrase: added
    assert "MAX_EMAIL_LEN=254" not in got.query_hints  # exact-looking, not in the source
    assert got.metadata["llm_dropped_hints"] == ["MAX_EMAIL_LEN=254"]
    assert got.metadata["observer"] == "llm/stub-model"
    assert (got.id, got.source_range, got.facts, got.created_at, got.status, got.tier) == (
        base.id, base.source_range, base.facts, base.created_at, base.status, base.tier)
    assert set(base.tags) <= set(got.tags) and "email-validation" in got.tags
    assert observer.stats() == {"calls": 1, "successes": 1, "fallbacks": 0, "last_error": None}
    request = stub.requests[0]
    assert request["model"] == "stub-model"
    assert request["response_format"] == {"type": "json_object"}


def test_prompt_holds_the_range_and_trims_a_big_log(stub: Stub) -> None:
    stub.replies = [Reply(content=json.dumps(GOOD))] * 2
    events, closed = _range()
    _observer(stub)(events, closed)
    user = stub.requests[0]["messages"][1]["content"]
    assert all(e.content in user for e in events if len(e.content) < 300)
    assert "[3] tool/tool_result" in user and "AUTH_ALLOWED_DOMAINS" in user
    log_text = big_pytest_log()
    assert log_text.count("\n") >= 2000
    big = Event("e-log", "demo", "ci", "2026-01-01T00:00:00Z", "tool", "tool_result",
                log_text, tool="bash", attrs={"command": "pytest -q"}, index=0)
    closed_log = ClosedRange("demo", None, SourceRange("ci", 0, 0), ("e-log",), "boundary")
    _observer(stub)([big], closed_log)
    prompt = stub.requests[1]["messages"][1]["content"]
    assert len(prompt) < len(log_text) / 5
    assert "lines omitted" in prompt and FAILING_NODE in prompt
    assert log_text.splitlines()[0] in prompt and log_text.splitlines()[-1] in prompt


def test_invalid_json_falls_back_and_is_counted(stub: Stub) -> None:
    stub.replies = [Reply(content="Sure! Here is a summary of the range.")]
    events, closed = _range()
    observer = _observer(stub)
    assert observer(events, closed) == observe(events, closed, ObserverConfig())
    assert (observer.calls, observer.successes, observer.fallbacks) == (1, 0, 1)
    assert "not JSON" in (observer.last_error or "")


def test_schema_invalid_output_falls_back(stub: Stub) -> None:
    bad = {**GOOD, "importance": 7}
    del bad["summary"]
    stub.replies = [Reply(content=json.dumps(bad))]
    events, closed = _range()
    observer = _observer(stub)
    assert observer(events, closed) == observe(events, closed, ObserverConfig())
    assert observer.fallbacks == 1
    error = observer.last_error or ""
    assert "importance" in error and "'summary' is a required property" in error


def test_http_500_then_success_is_retried(stub: Stub) -> None:
    stub.replies = [Reply(500), Reply(503), Reply(content=json.dumps(GOOD))]
    events, closed = _range()
    sleeps: list[float] = []
    observer = _observer(stub, sleeps, backoff_seconds=0.25)
    assert observer(events, closed).summary == GOOD["summary"]
    assert sleeps == [0.25, 0.5] and len(stub.requests) == 3
    assert observer.stats()["successes"] == 1 and observer.chat.retries == 2  # type: ignore[attr-defined]


def test_timeout_falls_back_after_retries(stub: Stub) -> None:
    stub.replies = [Reply(content=json.dumps(GOOD), delay=1.0)] * 2
    events, closed = _range()
    sleeps: list[float] = []
    observer = _observer(stub, sleeps, max_retries=1, timeout_seconds=0.2)
    assert observer(events, closed) == observe(events, closed, ObserverConfig())
    assert observer.fallbacks == 1 and len(sleeps) == 1
    assert "gave up after 2 attempts" in (observer.last_error or "")
    assert "Timeout" in (observer.last_error or "")


def test_client_error_is_not_retried(stub: Stub) -> None:
    stub.replies = [Reply(401, body={"error": {"message": "bad key"}})]
    sleeps: list[float] = []
    client = ChatClient(stub.url, "key", "m", sleep=sleeps.append)
    with pytest.raises(LLMError, match="HTTP 401") as info:
        client.complete_json([{"role": "user", "content": "hi"}], "anything")
    assert info.value.kind == "http" and sleeps == []


def test_response_format_refused_is_dropped_and_remembered(stub: Stub) -> None:
    stub.reject_response_format = True
    stub.replies = [Reply(content="```json\n{\"a\": 1}\n```"), Reply(content='x {"a": 2} y')]
    client = ChatClient(stub.url, "key", "m")
    assert client.complete_json([{"role": "user", "content": "hi"}], "t") == {"a": 1}
    assert client.json_mode is False
    assert client.complete_json([{"role": "user", "content": "hi"}], "t") == {"a": 2}
    assert ["response_format" in r for r in stub.requests] == [True, False, False]


def test_client_validates_a_given_schema(stub: Stub) -> None:
    stub.replies = [Reply(content='{"label": 3}')]
    client = ChatClient(stub.url, "key", "m")
    schema = {"type": "object", "required": ["label"], "properties": {"label": {"type": "string"}}}
    with pytest.raises(LLMError, match="label: 3 is not of type 'string'") as info:
        client.complete_json([{"role": "user", "content": "q"}], "classifier", schema)
    assert info.value.kind == "schema"


def test_bootstrap_builds_the_llm_observer_from_settings(stub: Stub, tmp_path: Any) -> None:
    settings = Settings(data_dir=tmp_path, llm_model="stub-model", openai_base_url=stub.url,
                        llm_max_retries=0)
    assert build_observer(Settings(data_dir=tmp_path)) is None
    observer = build_observer(settings)
    assert isinstance(observer, LLMObserver)
    stub.replies = [Reply(content=json.dumps(GOOD))]
    events, closed = _range()
    assert observer(events, closed).summary == GOOD["summary"]
    with pytest.raises(ValueError, match="LLM_BASE_URL"):
        build_llm_observer(Settings(data_dir=tmp_path, llm_model="m"))


def test_stats_report_the_llm_observers_fallbacks(stub: Stub, tmp_path: Any) -> None:
    """An unreachable model answer becomes a counted fallback, visible in /v1/stats."""
    from breadcrumb.infra.bootstrap import build_runtime
    from breadcrumb.query_api.runtime import stats
    from breadcrumb.stores.embedders.models import HashEmbedder

    stub.replies = [Reply(500, body={"error": {"message": "down"}})] * 4
    settings = Settings(data_dir=tmp_path, embedder="hash", llm_model="stub-model",
                        llm_base_url=stub.url, llm_max_retries=0, llm_backoff_seconds=0)
    runtime = build_runtime(settings, HashEmbedder())
    runtime.start()
    try:
        runtime.gateway.submit(example_events(), "test")
        runtime.gateway.wait_processed(60)
        observed = stats(runtime)["llm_observer"]
    finally:
        runtime.stop()
    assert observed["calls"] >= 2 and observed["fallbacks"] == observed["calls"]
    assert observed["successes"] == 0 and "500" in str(observed["last_error"])

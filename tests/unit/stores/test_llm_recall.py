"""LLM classifier and level-3 quoter against a local OpenAI-compatible stub server."""

from __future__ import annotations

import json
from pathlib import Path

from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.query_api.recall import RecallService
from breadcrumb.query_api.recall.extract.cut import extract_lines
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.llm.chat import ChatClient
from breadcrumb.stores.llm.recall import LlmClassifier, LlmQuoter
from breadcrumb.topics.records import Event
from tests.conftest import example_events
from tests.unit.stores.test_llm_observer import Reply, Stub, stub  # noqa: F401 (fixture)


def _chat(s: Stub) -> ChatClient:
    return ChatClient(s.url, "key", "stub-model", max_retries=0, sleep=lambda _: None)


def test_classifier_decides_when_no_rule_matches(stub: Stub, tmp_path: Path) -> None:  # noqa: F811
    runtime = build_runtime(Settings(data_dir=tmp_path / "d"), embedder=HashEmbedder())
    try:
        runtime.gateway.submit(example_events(), "test")
        runtime.gateway.wait_processed(120)
        base = runtime.recall
        recall = RecallService(base.index, base.memories, base.raw, base.embedder, base.weights,
                               base.clock, classifier=LlmClassifier(_chat(stub)))
        stub.replies = [Reply(content=json.dumps({"classification": "summary_ok",
                                                  "reason": "asks for the gist"}))]
        answer = recall.recall(RecallRequest(user_id="demo", query="sign-up trouble lately"))
        assert answer["classification"] == "summary_ok" and answer["level"] == 0
        assert "sign-up trouble lately" in json.dumps(stub.requests[-1])
        stub.replies = [Reply(content=json.dumps({"classification": "maybe", "reason": "?"}))]
        answer = recall.recall(RecallRequest(user_id="demo", query="sign-up trouble lately"))
        assert answer["classification"] == "ambiguous"  # invalid answer: counted, not guessed
        assert recall.errors["classifier"] == 1
        rule = recall.recall(RecallRequest(user_id="demo", query="the exact email regex"))
        assert rule["classification"] == "exact_value_needed"
        assert len(stub.requests) == 2  # rules answered first: the model was not asked
    finally:
        runtime.stop()


def test_quoter_keeps_only_verbatim_lines(stub: Stub, tmp_path: Path) -> None:  # noqa: F811
    events = [Event.from_dict(e).with_index(i, 10)
              for i, e in enumerate(e for e in example_events()
                                    if e["thread_id"] == "deploy-pipeline")]
    real = "+        image: ghcr.io/acme/shop-api:2.14.3"
    stub.replies = [Reply(content=json.dumps({"quotes": [real, "image: shop-api:9.9.9"]}))]
    quoter = LlmQuoter(_chat(stub))
    runtime = build_runtime(Settings(data_dir=tmp_path / "d"), embedder=HashEmbedder())
    try:
        base = runtime.recall
        recall = RecallService(base.index, base.memories, base.raw, base.embedder, base.weights,
                               base.clock, quoter=quoter)
        cut = extract_lines("which image tag", events, 200, HashEmbedder().count_tokens)
        quoted = recall.extractor.word_exact.quoted("which image tag", events, cut, 200)
        assert quoted is not None
        assert [line.text for line in quoted.lines] == [real]
        assert recall.errors["quotes_dropped"] == 1
        stub.replies = [Reply(500)]
        assert recall.extractor.word_exact.quoted("which image tag", events, cut, 200) is None
        assert recall.errors["quoter"] == 1
    finally:
        runtime.stop()

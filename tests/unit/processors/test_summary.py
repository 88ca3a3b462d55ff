"""Summaries in the range's own language, built only from the range they describe.

Real-shaped events: the demo session of ``examples/agent-session.jsonl`` (an English coding
session that ends with a Japanese request about another file) and the golden corpus.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from breadcrumb.eval.corpus import golden_events
from breadcrumb.processors.hints import extract_typed_values
from breadcrumb.processors.observer import ObserverConfig, observe
from breadcrumb.processors.summary import call_gist, exchanges, gist, range_language
from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.topics.records import ClosedRange, Event, SourceRange

ROOT = Path(__file__).resolve().parents[3]
CFG = ObserverConfig()
JA_LABELS = ("結論: ", "ファイル: ", "エラー: ", "テスト成功", "テスト失敗", "／")
EN_LABELS = ("→ ", "files: ", "error: ", "tests pass", "tests fail")


def demo_thread(name: str = "auth-refactor") -> list[Event]:
    lines = (ROOT / "examples" / "agent-session.jsonl").read_text("utf-8").splitlines()
    dicts = [d for d in map(json.loads, lines) if d["thread_id"] == name]
    return [Event.from_dict(d).with_index(i, estimate_tokens(d["content"]))
            for i, d in enumerate(dicts)]


def closed(events: list[Event]) -> ClosedRange:
    first, last = events[0], events[-1]
    return ClosedRange(first.user_id, first.project_id,
                       SourceRange(first.thread_id, first.index or 0, last.index or 0),
                       tuple(e.event_id for e in events), "flush")


def summary_of(events: list[Event]) -> str:
    return observe(events, closed(events), CFG).summary


def test_the_demo_session_is_english_and_its_summary_has_english_labels() -> None:
    events = demo_thread()
    assert [e.content[:6] for e in events if e.role == "user"][-1] == "ありがとう。"
    obs = observe(events, closed(events), CFG)
    assert obs.metadata["language"] == "en"
    assert "files: src/auth/validate-email.ts" in obs.summary
    assert "tests pass (exit 0)" in obs.summary
    assert not [label for label in JA_LABELS if label in obs.summary], obs.summary
    assert obs.retrieve_when.startswith("When a question is about")
    # the Japanese request's words stay searchable, after the English phrases
    assert "email validation" in obs.query_hints and "ポート" in obs.query_hints


def test_each_conclusion_follows_the_request_it_answers() -> None:
    summary = summary_of(demo_thread())
    signup = summary.index("Sign-up accepts addresses like 'bob@@example.com'.")
    port_request = summary.index("DBのポートは 5432 じゃなくて 6432")
    port_done = summary.index("→ config/database.yml をポート 6432")
    assert signup < summary.index("→ All 40 tests pass.") < port_request < port_done
    # the sign-up request is never concluded by the port change of the later request
    assert not summary.startswith("Sign-up accepts addresses like 'bob@@example.com'.; → config")


def test_a_japanese_range_gets_japanese_labels() -> None:
    tail = demo_thread()[15:]
    assert [e.index for e in tail] == [15, 16, 17, 18]
    obs = observe(tail, closed(tail), CFG)
    assert obs.metadata["language"] == "ja"
    assert obs.summary.startswith("あと、DBのポートは 5432 じゃなくて 6432 (pgbouncer)")
    assert "／結論: config/database.yml をポート 6432" in obs.summary
    assert "／ファイル: config/database.yml" in obs.summary
    assert not [label for label in EN_LABELS if label in obs.summary], obs.summary


def test_an_english_range_gets_english_labels_and_only_its_own_facts() -> None:
    events = demo_thread()
    head, tail = events[:15], events[15:]
    first, second = summary_of(head), summary_of(tail)
    assert "→ All 40 tests pass." in first and "files: src/auth/validate-email.ts" in first
    assert not [label for label in JA_LABELS if label in first], first
    for other in ("6432", "5432", "database.yml", "pgbouncer", "ポート"):
        assert other not in first, (other, first)
    for other in ("Sign-up", "validate-email", "EMAIL_RE", "AssertionError", "40 tests"):
        assert other not in second, (other, second)


def ranges_of_the_golden_corpus() -> list[list[Event]]:
    by_thread: dict[tuple[str, str], list[Event]] = {}
    for d in golden_events():
        e = Event.from_dict(d)
        by_thread.setdefault((e.user_id, e.thread_id), []).append(
            e.with_index(e.index or 0, estimate_tokens(e.content)))
    return [evs for evs in by_thread.values() if len(evs) > 1]


@pytest.mark.parametrize("events", [demo_thread(), demo_thread("deploy-pipeline"),
                                    *ranges_of_the_golden_corpus()])
def test_every_exact_value_of_a_summary_is_in_its_own_range(events: list[Event]) -> None:
    """Ports, paths, regexes, errors... a summary names only values its events hold."""
    summary = summary_of(events)
    text = "\n".join(" ".join(e.content.split()) for e in events)
    text += "\n" + "\n".join(str(v) for e in events for v in e.attrs.values())
    parts = re.split(r"; |／|, ", summary)  # labels, file lists: one value per part
    values = [v.rstrip("…") for part in parts for _k, v in extract_typed_values(part)]
    assert values, summary
    missing = [v for v in values if v not in text]
    assert not missing, (missing, summary)


def test_range_language_is_the_users_majority_with_ties_to_the_first() -> None:
    events = demo_thread()
    users = [e for e in events if e.role == "user"]
    assert range_language(events) == "en"
    assert range_language(events[15:]) == "ja"
    assert range_language([users[2], users[0]]) == "ja"  # one each: the first speaker wins
    assert range_language([e for e in events if e.role != "user"][:3]) == "en"


def test_exchanges_cut_at_a_change_of_language_and_cover_every_event() -> None:
    events = demo_thread()
    cut = exchanges(events)
    assert [[e.index for e in part][0] for part in cut] == [0, 15]
    assert [e.index for part in cut for e in part] == [e.index for e in events]


def test_gist_skips_courtesies() -> None:
    assert gist("Agreed. Allowed domains are example.com only.") == (
        "Allowed domains are example.com only.")
    assert gist("ありがとう。あと、ポートは 6432 にして。") == "あと、ポートは 6432 にして。"
    assert gist("Thanks!") == "Thanks!"
    assert gist("Fix the parser. Thanks!") == "Fix the parser."
    assert gist("---\n\nThe tests pass now.") == "The tests pass now."  # a rule says nothing
    assert gist("---") == "---"


def _tool_event(content: str, kind: str, index: int = 0, **attrs: object) -> Event:
    return Event.from_dict({"event_id": f"p{index}", "user_id": "u", "thread_id": "t",
                            "index": index, "ts": "2026-01-01T00:00:00Z", "role": "tool",
                            "kind": kind, "content": content, "attrs": attrs})


def test_a_patch_alone_is_summarised_by_its_files_not_its_envelope() -> None:
    patch = ("*** Begin Patch\n*** Add File: web/package.json\n+{\n+  \"name\": "
             "\"edgerunner-web\",\n+  \"private\": true\n+}\n*** End Patch")
    summary = summary_of([_tool_event(patch, "file_edit")])
    assert summary.startswith('add web/package.json: "name": "edgerunner-web",'), summary
    assert "Begin Patch" not in summary


def test_a_read_file_is_summarised_without_its_markup() -> None:
    read = "<path>docs/spec.md</path>\n<type>file</type>\n<content>\n1: # Spec"
    assert summary_of([_tool_event(read, "tool_result")]).startswith("docs/spec.md")


def test_a_bun_test_run_has_a_test_outcome() -> None:
    run = _tool_event(" 48 pass\n 25 fail\nRan 73 tests across 10 files. [35.84s]\n",
                      "tool_result", command="bun test", exit_code=1)
    summary = summary_of([run])
    assert "Ran 73 tests across 10 files." in summary and "tests fail (exit 1)" in summary


def test_a_lookup_call_stored_as_its_arguments_json_is_summarised_as_a_reader_says_it() -> None:
    # Claude Code's Read and OpenCode's read are stored as their arguments' JSON (importers)
    read = Event.from_dict({"event_id": "r0", "user_id": "u", "thread_id": "t", "index": 0,
                            "ts": "2026-01-01T00:00:00Z", "role": "assistant",
                            "kind": "tool_call", "tool": "Read",
                            "content": '{"file_path":"X:\\\\addons\\\\models\\\\activity.py",'
                                       '"limit":100}'})
    summary = summary_of([read, _tool_event("1  from odoo import models", "tool_result", 1)])
    assert summary.startswith("output of `Read X:\\addons\\models\\activity.py`"), summary
    assert '{"file_path"' not in summary


@pytest.mark.parametrize(("tool", "arguments", "said"), [
    ("Grep", '{"pattern": "TODO", "glob": "*.py"}', "Grep TODO"),
    ("AskUserQuestion", '{"timeoutMs": 60000, "questions": [{"header": "Brand"}]}',
     "AskUserQuestion Brand"),
    (None, '{"path": "docs/spec.md"}', "docs/spec.md"),
    ("Tool", '{"limit": 3}', '{"limit": 3}'),  # no string to name: the JSON as stored
    ("Tool", "{not json", "{not json"),
])
def test_call_gist(tool: str | None, arguments: str, said: str) -> None:
    assert call_gist(tool, arguments) == said


def _said_by(role: str, content: str, index: int, kind: str = "message") -> Event:
    return Event.from_dict({"event_id": f"w{index}", "user_id": "u", "thread_id": "t",
                            "index": index, "ts": "2026-01-01T00:00:00Z", "role": role,
                            "kind": kind, "content": content})


def test_a_request_is_the_users_words_not_the_harness_around_them() -> None:
    # Cursor: attachments and links around the <user_query>; Cline: <user_message>
    cursor = ("<attached_files>\n<file path=\"src/app.ts\">…</file>\n</attached_files>\n"
              "<external_links>\nhttps://docs.payai.network\n</external_links>\n"
              "<user_query>\nwhy does the facilitator reject the payment?\n</user_query>")
    summary = summary_of([_said_by("user", cursor, 0), _said_by("assistant", "It expired.", 1)])
    assert summary.startswith("why does the facilitator reject the payment?; → It expired.")
    cline = "<user_message>\nHow do I get rid of these remnants of firebase?\n</user_message>"
    assert summary_of([_said_by("user", cline, 0)]).startswith("How do I get rid of these")
    # no such tag: only the lines of markup alone go
    plain = "<blank>\nfix the login form\n"
    assert summary_of([_said_by("user", plain, 0)]).startswith("fix the login form")

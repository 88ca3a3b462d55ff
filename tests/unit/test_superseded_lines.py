"""Stale fact values drop only the lines that hold them whole, never a longer value."""

from __future__ import annotations

from breadcrumb.query_api.recall.extract.superseded import drop_superseded, holds_value
from breadcrumb.query_api.recall.passages import Extract, Line
from breadcrumb.topics.records import Observation, SourceRange


def _count(text: str) -> int:
    return len(text.split())


def _memory(**stale: str) -> Observation:
    facts = {key: {"value": value} for key, value in stale.items()}
    return Observation(id="m", user_id="u", project_id=None, summary="s",
                       source_range=SourceRange("t", 0, 3), tags=(), query_hints=(),
                       retrieve_when="", importance=0.5, created_at="2026-12-01T00:00:00Z",
                       metadata={"superseded_facts": facts})


def _lines(*texts: str) -> Extract:
    return Extract(tuple(Line(f"e{i}", i, 0, len(t), t, 1.0) for i, t in enumerate(texts)), 30)


def test_a_value_counts_only_where_it_stands_whole() -> None:
    assert holds_value("PORT=80", "80") and holds_value("listen on port 80.", "80")
    assert holds_value("127.0.0.1:5432", "5432") and holds_value("-p 80:80", "80")
    for text in ("PORT=8080", "timeout 180ms", "version 1.80", "v80", "cache-9:6379", "80.5"):
        assert not holds_value(text, "80" if "9" not in text else "9"), text
    url = "redis://cache-9:37270/0"
    assert holds_value(f"Set RETRY_URL={url} and", url)
    assert not holds_value("Set RETRY_URL=redis://cache-9:37270/01", url)
    assert holds_value('EMAIL_RE = "^a$"', '"^a$"') and not holds_value("x", "")
    assert holds_value("接続先を東京に変更", "東京")  # no spaces in CJK text: no bounds


def test_a_stale_short_value_leaves_a_line_with_a_longer_one() -> None:
    """Before: a stale ``80`` dropped the line holding ``8080`` (a substring match)."""
    cut = _lines("WEB_PORT=8080", "WEB_PORT=80 in the old compose file", "took 180 ms")
    kept, stale = drop_superseded(cut, _memory(**{"env:WEB_PORT": "80"}), False, _count)
    assert [ln.text for ln in kept.lines] == ["WEB_PORT=8080", "took 180 ms"] and stale == []
    assert kept.tokens == 4  # the kept lines' own cost
    kept, stale = drop_superseded(_lines("WEB_PORT=8080"), _memory(**{"env:WEB_PORT": "80"}),
                                  True, _count)
    assert stale == []  # history asked for: 80 is not named when no line holds it whole


def test_the_fleets_own_line_survives_a_stale_digit() -> None:
    """The demo's first line, with another fact of the range superseded at ``9``."""
    line = "apply_retry in src/jobs/retry.py breaks under load. Set RETRY_POOL_SIZE=" \
           "redis://cache-9:37270/0 and make `cargo test retry` pass."
    kept, _ = drop_superseded(_lines(line), _memory(**{"config:workers": "9",
                                                       "env:RETRY_COUNT": "37"}), False, _count)
    assert [ln.text for ln in kept.lines] == [line]
    kept, _ = drop_superseded(_lines(line), _memory(**{"env:RETRY_POOL_SIZE":
                                                       "redis://cache-9:37270/0"}),
                              False, _count)
    assert kept.lines == ()  # the value itself replaced: the line is history


def test_a_command_asked_for_is_kept_with_its_replaced_value_named() -> None:
    """u02 (Cursor): "which command starts the web explorer against the runner" — the
    command said was ``LEASH_RUNNER_URL=http://localhost:8787 pnpm …``; the port moved to
    8788 later. The command is what was run: kept, 8787 named as replaced. Asked for the
    command *now*, or for a value, the line is history and dropped."""
    from breadcrumb.query_api.recall.question import analyze_query

    command = "LEASH_RUNNER_URL=http://localhost:8787 pnpm --filter @leash/web dev"
    memory = _memory(**{"port:LEASH_RUNNER_URL": "8787"})
    asked = analyze_query("Which command starts the leash web explorer against the runner?")
    kept, named = drop_superseded(_lines(command, "open http://localhost:3000"), memory,
                                  False, _count, asked)
    assert [ln.text for ln in kept.lines] == [command, "open http://localhost:3000"]
    assert named == ["8787"]
    for question in ("Which command starts the web explorer now?",
                     "Which port does LEASH_RUNNER_URL point at?"):
        kept, named = drop_superseded(_lines(command), memory, False, _count,
                                      analyze_query(question))
        assert kept.lines == () and named == [], question
    kept, named = drop_superseded(_lines(command), memory, False, _count)  # no intent
    assert kept.lines == ()

"""facts: keyed exact values, last assignment wins, removed diff lines ignored."""

from __future__ import annotations

from typing import Any

from breadcrumb.eval.corpus import CHANGES, REGEX_V1, REGEX_V2, golden_events
from breadcrumb.processors.facts import extract_facts
from breadcrumb.topics.records import Event


def ev(i: int, kind: str, content: str, **attrs: Any) -> Event:
    return Event(event_id=f"e{i}", user_id="u1", thread_id="t", ts="2024-05-01T00:00:00Z",
                 role="tool", kind=kind, content=content, index=i, attrs=attrs)


def as_map(events: list[Event]) -> dict[str, str]:
    return {f.key: f.value for f in extract_facts(events)}


def test_env_assignment_in_a_message() -> None:
    facts = as_map([ev(0, "message", "set AUTH_ALLOWED_DOMAINS=example.com,corp.example.")])
    assert facts["env:AUTH_ALLOWED_DOMAINS"] == "example.com,corp.example"


def test_constant_in_code_edit_keyed_by_path_and_removed_lines_ignored() -> None:
    diff = ("--- a/src/auth/validate-email.ts\n+++ b/src/auth/validate-email.ts\n"
            "-export const EMAIL_RE = /^old$/;\n+export const EMAIL_RE = /^[^@\\s]+@[^@\\s]+$/i;\n")
    facts = as_map([ev(0, "file_edit", diff, path="src/auth/validate-email.ts")])
    assert facts == {"file:src/auth/validate-email.ts#EMAIL_RE": "/^[^@\\s]+@[^@\\s]+$/i"}


def test_constant_without_path_is_a_symbol_and_python_constants_work() -> None:
    facts = as_map([ev(0, "file_edit", "+EMAIL_RE = re.compile(r\"^x$\")\n+if A == 3: pass\n",
                       language="py")])
    assert facts.get("env:EMAIL_RE") is None
    facts = as_map([ev(0, "file_edit", "+EMAIL_RE = re.compile(r\"^x$\")\n", path="app/v.py")])
    assert facts == {"file:app/v.py#EMAIL_RE": 're.compile(r"^x$")'}
    facts = as_map([ev(0, "file_edit", "+const limit = 20;\n", path="src/a.js")])
    assert facts == {"file:src/a.js#limit": "20"}


def test_yaml_nesting_images_and_ports() -> None:
    compose = ("services:\n  db:\n    image: postgres:16-alpine\n  cache:\n    image: redis:7.2\n")
    facts = as_map([ev(0, "file_edit", compose, path="docker-compose.yml")])
    assert facts["file:docker-compose.yml#services.db.image"] == "postgres:16-alpine"
    assert facts["file:docker-compose.yml#services.cache.image"] == "redis:7.2"
    assert facts["image:postgres"] == "16-alpine"
    assert facts["image:redis"] == "7.2"
    facts = as_map([ev(0, "tool_call", "docker run -p 6432:6432 edoburu/pgbouncer:1.22.1")])
    assert facts["port:pgbouncer"] == "6432"
    assert facts["image:edoburu/pgbouncer"] == "1.22.1"
    assert as_map([ev(0, "message", "postgres listens on port 5432")]) == {"port:postgres": "5432"}
    assert as_map([ev(0, "message", "DB_PORT=5433")])["port:DB_PORT"] == "5433"


def test_ports_are_keyed_by_the_setting_they_are_written_in() -> None:
    """Two settings naming one service are two keys: a sentinel port is not the port."""
    facts = as_map([ev(0, "message", "REDIS_PORT=6379"),
                    ev(1, "message", "REDIS_SENTINEL_PORT=26379 for the redis sentinel")])
    assert facts["port:REDIS_PORT"] == "6379"
    assert facts["port:REDIS_SENTINEL_PORT"] == "26379"
    assert "port:redis" not in facts
    # a URL's port belongs to the variable holding the URL, as written
    facts = as_map([ev(0, "message", "Set ORDERS_URL=redis://cache-2:46903/0 and rerun."),
                    ev(1, "file_edit", '+    orders = os.environ.get("ORDERS_POOL_SIZE", '
                       '"redis://cache-4:54202/0")', path="src/api/orders.py")])
    assert facts["port:ORDERS_URL"] == "46903"
    assert facts["port:ORDERS_POOL_SIZE"] == "54202"
    assert "port:redis" not in facts
    # prose without a setting name keeps the service word
    assert as_map([ev(0, "message", "the redis port is 6380")]) == {"port:redis": "6380"}
    assert as_map([ev(0, "message", "PORT=8080")])["port:PORT"] == "8080"


def test_json_and_yaml_of_a_file_read_but_not_in_messages() -> None:
    out = '{"timeout": 30, "mode": "strict"}\nlisten_addr: 0.0.0.0\nTests: 2 passed\n'
    facts = as_map([ev(0, "tool_call", "cat deploy/settings.json"), ev(1, "tool_result", out)])
    assert facts == {"file:deploy/settings.json#timeout": "30",
                     "file:deploy/settings.json#mode": "strict",
                     "file:deploy/settings.json#listen_addr": "0.0.0.0"}
    assert as_map([ev(0, "message", "mode: strict")]) == {}
    # output that names no file holds no settings: a git error, a task list's status
    assert as_map([ev(0, "tool_call", "git cherry-pick --abort"),
                   ev(1, "tool_result", "error: Entry 'src/a.ts' not uptodate.")]) == {}
    assert as_map([ev(0, "tool_result", "status: TODO\ntitle: Task 002")]) == {}


def test_last_assignment_wins_and_points_at_its_event() -> None:
    events = [ev(0, "message", "DB_PORT=5432"), ev(1, "message", "ok"),
              ev(2, "message", "DB_PORT=6432")]
    facts = [f for f in extract_facts(events) if f.key == "env:DB_PORT"]
    assert [(f.value, f.event_id, f.event_index) for f in facts] == [("6432", "e2", 2)]


def test_facts_values_are_verbatim_and_deterministic() -> None:
    events = [Event.from_dict(d) for d in golden_events()]
    first = extract_facts(events)
    assert first == extract_facts(events)
    contents = {e.event_id: e.content for e in events}
    assert all(f.value in contents[f.event_id] for f in first)


def test_corpus_changes_are_detectable_as_same_key() -> None:
    events = [Event.from_dict(d) for d in golden_events() if d["user_id"] == "u1"]
    by_thread: dict[str, list[Event]] = {}
    for e in events:
        by_thread.setdefault(e.thread_id, []).append(e)
    seen: dict[str, list[str]] = {}
    for thread_events in by_thread.values():
        for f in extract_facts(thread_events):
            seen.setdefault(f.key, []).append(f.value)
    for change in CHANGES:
        assert change["old"] in seen[change["key"]]
        assert change["new"] in seen[change["key"]]
    assert seen["file:src/auth/validate-email.ts#EMAIL_RE"] == [REGEX_V1, REGEX_V2]


def test_settings_read_from_a_file_are_that_files() -> None:
    """``name:`` of two skill files read by two calls: two files' settings, not one key
    changed (a tenant reads many files with a ``name:`` line)."""
    events = [ev(0, "tool_call", "sed -n '1,40p' skills/apply-grant/SKILL.md"),
              ev(1, "tool_result", "---\nname: apply-grant\n---"),
              ev(2, "tool_call", "cat skills/browser/SKILL.md"),
              ev(3, "tool_result", "---\nname: browser\n---")]
    facts = as_map(events)
    assert facts["file:skills/apply-grant/SKILL.md#name"] == "apply-grant"
    assert facts["file:skills/browser/SKILL.md#name"] == "browser"
    assert "config:name" not in facts


def test_a_key_takes_its_value_from_its_own_assignment_not_a_neighbours() -> None:
    """issue 46: the sample session's closing message names ``LOGIN_RATE_LIMIT = "5/minute"``
    and, a sentence later, the Redis URL; 6380 is Redis's port, not the rate limit's."""
    said = ('All 3 tests pass. POST /login now allows 5 attempts per minute per IP '
            '(LOGIN_RATE_LIMIT = "5/minute"); the 6th answers 429. Counters live in Redis at '
            'redis://cache.internal:6380/2 under rl:login:{ip} and expire after 60 s.')
    facts = as_map([ev(0, "message", said)])
    assert "port:LOGIN_RATE_LIMIT" not in facts
    assert facts["port:redis"] == "6380"
    # another value or a sentence between a name and a port: not its port either
    assert as_map([ev(0, "message", "set NEO4J_AUTH=neo4j/password, TCP proxy on port 7687")]) \
        == {"env:NEO4J_AUTH": "neo4j/password"}
    assert "port:MAX_RETRIES" not in as_map([ev(0, "message",
                                               "MAX_RETRIES is 5. Redis on port 6380.")])
    # ... while a value written after its name, however it is said, stays the name's
    for text, key in (('    REDIS_URL: str = "redis://localhost:6379/0"', "port:REDIS_URL"),
                      ("`LEASH_RUNNER_URL` in `apps/web/.env` is now set to "
                       "**`http://localhost:8788`**.", "port:LEASH_RUNNER_URL"),
                      ('BACKEND_CORS_ORIGINS = ["http://localhost:8080"]',
                       "port:BACKEND_CORS_ORIGINS")):
        assert key in as_map([ev(0, "message", text)]), text


def test_the_sample_sessions_facts_name_no_port_for_the_rate_limit() -> None:
    """The Claude Code sample session (README's tour), imported and observed whole."""
    from pathlib import Path

    from breadcrumb.importers import ImportOptions, import_file

    sample = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts" / \
        "claude-code-session.jsonl"
    events = [Event.from_dict({**e, "index": i}) for i, e in
              enumerate(import_file(sample, "auto", ImportOptions()).events)]
    facts = as_map(events)
    assert "port:LOGIN_RATE_LIMIT" not in facts
    assert facts["port:REDIS_URL"] == "6380" and facts["env:REDIS_URL"].endswith(":6380/2")


def test_a_sessions_settings_note_gives_facts_of_its_thread() -> None:
    """issue 46: the model, provider, agent version, working directory and branch an
    importer read are facts of the session's thread (``session:<thread>#<name>``), each
    value verbatim in the note; a name the content does not hold gives none."""
    note = ev(0, "note", "model: gpt-5.6-sol\nprovider: openai\nworking directory: /srv/ledger",
              session_settings={"model": "gpt-5.6-sol", "provider": "openai",
                                "working_directory": "/srv/ledger", "git_branch": "absent"})
    assert as_map([note]) == {"session:t#model": "gpt-5.6-sol", "session:t#provider": "openai",
                              "session:t#working_directory": "/srv/ledger"}
    said = ev(1, "message", "model: gpt-5.6-sol", session_settings={"model": "gpt-5.6-sol"})
    assert as_map([said]) == {}  # only a note carries a session's settings


def test_a_urls_port_stays_the_settings_across_a_sentence() -> None:
    """The fleet demo's diagnosis names the setting, then its default URL a sentence later:
    the port is RETRY_URL's, not a ``port:redis`` that every session would supersede."""
    said = ("The failure is `ValueError`: load_retry ignores RETRY_URL. Reading it from the "
            "environment with default redis://cache-8:63292/0 fixes it.")
    facts = as_map([ev(0, "message", said)])
    assert facts.get("port:RETRY_URL") == "63292" and "port:redis" not in facts

"""Extract: verbatim lines, in source order, within the token budget."""

from __future__ import annotations

from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.query_api.recall.extract.cut import extract_lines, quoted_lines
from breadcrumb.query_api.recall.passages import Passage, split_lines
from breadcrumb.topics.records import Event


def _event(index: int, content: str) -> Event:
    return Event(event_id=f"e{index}", user_id="u", thread_id="t", ts="2026-11-01T00:00:00Z",
                 role="tool", kind="tool_result", content=content, index=index)


def test_lines_are_exact_slices() -> None:
    event = _event(0, "a\r\n\r\n  b  \nc")
    for start, end, text in split_lines(event):
        assert event.content[start:end] == text


def test_long_log_yields_the_failing_line_under_budget() -> None:
    lines = [f"PASSED tests/test_mod.py::test_case_{i}" for i in range(2000)]
    lines[1234] = "FAILED tests/test_mod.py::test_case_1234 - AssertionError: 41 != 42"
    log = _event(3, "\n".join(lines))
    cut = extract_lines("which test failed in the pytest log?", [log], 60, estimate_tokens)
    assert cut.tokens <= 60
    assert lines[1234] in cut.text.splitlines()
    assert cut.event_ids == ["e3"]
    for line in cut.lines:
        assert log.content[line.start:line.end] == line.text


def test_budget_is_respected_and_order_is_source_order() -> None:
    events = [_event(i, f"EMAIL_RE regex line {i}\nunrelated") for i in range(10)]
    cut = extract_lines("EMAIL_RE regex", events, 30, estimate_tokens)
    assert 0 < cut.tokens <= 30
    indices = [ln.event_index for ln in cut.lines]
    assert indices == sorted(indices)


def _edit(index: int, content: str) -> Event:
    return Event(event_id=f"e{index}", user_id="u", thread_id="t", ts="2026-11-01T00:00:00Z",
                 role="assistant", kind="file_edit", content=content, index=index)


def test_regex_question_gets_the_edit_line_not_the_noise() -> None:
    noise = _event(1, "\n".join(f" ✓ validate-email.test.ts > accepts user{i}@example.com"
                                for i in range(40)))
    edit = _edit(2, "--- a/src/auth/validate-email.ts\n+++ b/src/auth/validate-email.ts\n"
                    "-export const EMAIL_RE = /.+@.+/;\n"
                    "+export const EMAIL_RE = /^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$/i;\n")
    cut = extract_lines("the exact email regex we decided for sign-up validation",
                        [noise, edit], 800, estimate_tokens)
    assert "+export const EMAIL_RE = /^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$/i;" in cut.text.splitlines()
    assert "accepts user" not in cut.text
    assert not any(line.text.startswith(("--- ", "+++ ")) for line in cut.lines)


def test_chunk_passages_keep_event_offsets() -> None:
    event = _event(4, "first line\nsecond line with DB_PORT=6432\nthird")
    chunk = Passage(event.event_id, 4, 11, event.content[11:])
    cut = extract_lines("which DB_PORT", [chunk], 100, estimate_tokens)
    (line,) = cut.lines
    assert event.content[line.start:line.end] == line.text == "second line with DB_PORT=6432"


def test_quotes_must_be_verbatim() -> None:
    event = _event(5, "alpha\nRATE_LIMIT_RPS=20\nomega")
    lines = quoted_lines(["RATE_LIMIT_RPS=20", "RATE_LIMIT_RPS=25"], [event])
    assert [ln.text for ln in lines] == ["RATE_LIMIT_RPS=20"]


def _edit(index: int, content: str) -> Event:
    return Event(event_id=f"e{index}", user_id="u", thread_id="t", ts="2026-11-01T00:00:00Z",
                 role="assistant", kind="file_edit", content=content, index=index)


def test_an_edit_answers_with_its_added_line_not_only_its_header() -> None:
    # as the importers render a Claude Code Edit: header, --- old / +++ new sections
    edit = _edit(1, 'Edit /srv/ledger/Cargo.toml\n--- old\n[workspace]\n'
                    '+++ new\n[workspace]\nresolver = "3"')
    asked = _event(0, "set the workspace resolver to 3")
    cut = extract_lines("What resolver line did we add to the ledger workspace Cargo.toml?",
                        [asked, edit], 800, estimate_tokens)
    lines = cut.text.splitlines()
    assert 'resolver = "3"' in lines  # the header's path terms count for its lines
    assert "--- old" not in lines and "+++ new" not in lines  # markers are no evidence


def test_a_written_file_offers_the_line_asked_about() -> None:
    body = "\n".join(f"# setting {i}" for i in range(40))
    write = _edit(2, f"Write /srv/app/backend/.env.example\n{body}\n"
                     "EMBEDDING_MODEL=BAAI/bge-base-en-v1.5\nCHAT_MODEL=deepseek-chat")
    cut = extract_lines("What EMBEDDING_MODEL did we put in backend/.env.example?", [write], 800,
                        estimate_tokens)
    assert "EMBEDDING_MODEL=BAAI/bge-base-en-v1.5" in cut.text.splitlines()


def test_search_replace_blocks_rank_the_new_side_and_drop_their_markers() -> None:
    from breadcrumb.query_api.recall.lines.scoring import score_exact
    from breadcrumb.query_api.recall.passages import Passage as P

    text = ("edit settings.py\n<<<<<<< SEARCH\nTIMEOUT_SECONDS = 30\n=======\n"
            "TIMEOUT_SECONDS = 47\n>>>>>>> REPLACE")
    # a chunk passage carries no kind: the blocks themselves say it is an edit
    scored = {ln.text: ln.score for ln in score_exact(
        "What client timeout did we set in settings.py?", [P("e1", 1, 0, text)])}
    assert scored["TIMEOUT_SECONDS = 47"] > scored["TIMEOUT_SECONDS = 30"]
    assert not {"<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"} & set(scored)

"""The word-exact cut's term weights, on line shapes of public sessions (real-session
question set, eval/agents/real_questions.jsonl): a named file counts once, a term on
every line counts less, a range's lines tie-break by its top chunks, and the command and
failure shapes that task runners and compilers print."""

from __future__ import annotations

from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.query_api.recall.extract.cut import extract_lines
from breadcrumb.query_api.recall.lines.scoring import exact_weights, score_exact
from breadcrumb.query_api.recall.lines.shapes import FAILURE, SHELL_COMMAND
from breadcrumb.query_api.recall.lines.term_groups import TermGroups
from breadcrumb.query_api.recall.passages import Passage


def _scores(question: str, text: str) -> dict[str, float]:
    return {ln.text: ln.score for ln in score_exact(question, [Passage("e", 0, 0, text)])}


def test_a_named_file_counts_once_and_the_value_wins() -> None:
    """a03 (aider): the requirements pin, not the lines that name the file."""
    text = "\n".join([
        "1.  The `asyncpg` driver is missing from your `backend/requirements.txt`.",
        "**1. Modify `backend/requirements.txt`**",
        "fastapi==0.110.0",
        "slowapi==0.1.9",
        "uvicorn[standard]",
    ])
    scores = _scores("Which slowapi version is pinned in backend/requirements.txt?", text)
    assert max(scores, key=scores.__getitem__) == "slowapi==0.1.9"


def test_term_groups_count_a_path_once_and_an_identifier_by_its_parts() -> None:
    question = "How does backend/settings.py read MAX_DEBUG_ATTEMPTS?"
    terms = {t: 1.0 for t in ("backend/settings.py", "backend", "settings.py", "settings",
                              "py", "max_debug_attempts", "max", "debug", "attempts")}
    groups = TermGroups(question, terms)
    path = ["backend/settings.py", "backend", "settings.py", "settings", "py"]
    assert groups.weight(path) == 1.0 + 0.1 * 4  # the best term, a share of the others
    assert groups.weight(["settings"]) == 1.0
    ident = ["max_debug_attempts", "max", "debug", "attempts"]
    assert groups.weight(ident) == 4.0  # an identifier's pieces keep counting apart


def test_a_term_on_every_line_counts_less() -> None:
    """p04 (trace-taxi): ``coverage`` is on every line of a coverage report."""
    lines = [f"|--AW{n}_CP  50.00% (1/2)  (axi4_master_coverage.sv) coverage" for n in range(9)]
    weights = exact_weights("What coverage did AWLEN_CP reach?", lines)
    assert weights["coverage"] < 0.5 * weights["awlen_cp"]
    assert weights["awlen_cp"] == 1.0  # on no line: its weight as asked


def test_ties_go_to_the_lines_of_the_top_chunks() -> None:
    """c03 (Claude Code): the version line tied the command lines of the range's top
    chunks and was not in them; the range's events are cut, chunk lines winning ties."""
    text = "upgrading the module now\nthe container reports 18.0-20260305"
    passage = Passage("e", 0, 0, text)
    question = "Which module did the container report?"
    first, second = text.splitlines()
    scored = {ln.text: ln for ln in score_exact(question, [passage])}
    assert scored[first].score == scored[second].score  # a tie
    plain = extract_lines(question, [passage], 800, estimate_tokens, max_lines=1)
    assert [ln.text for ln in plain.lines] == [first]  # source order
    near = {(scored[second].event_id, scored[second].start)}
    chosen = extract_lines(question, [passage], 800, estimate_tokens, max_lines=1, prefer=near)
    assert [ln.text for ln in chosen.lines] == [second]


def test_commands_by_path_and_behind_a_task_runner() -> None:
    for line in (r"C:\Users\me\anaconda3\envs\aider\Scripts\aider --model x --architect",
                 "/usr/local/bin/python3 -m pytest -q",
                 "[test] $ cargo nextest run --workspace",
                 "aider.exe --dark-mode"):
        assert SHELL_COMMAND.match(line), line
    for line in ("/etc/hosts lists the names", "the / path", "[note] see above"):
        assert not SHELL_COMMAND.match(line), line


def test_a_compiler_diagnostic_is_a_failure_line() -> None:
    assert FAILURE.search("internal/export/csv.go:4:2: undefined: csv")
    assert FAILURE.search("src/main.c:12:5: warning: unused variable")
    assert not FAILURE.search("see internal/export/csv.go:4:2 for the loop")


def test_a_count_after_the_thing_it_counts() -> None:
    """vitest prints ``Tests  40 passed (40)``, jest ``Tests: 3 failed, 40 total``."""
    from breadcrumb.processors.test_runs import counts

    test = counts("test")
    for line in ("      Tests  40 passed (40)", "Tests:       3 failed, 40 total", "Ran 73 tests"):
        assert test.search(line), line
    for line in ("Test Files  1 passed (1)", "tests 3 files", "the tests"):
        assert not test.search(line), line


def test_commands_asked_in_the_plural_and_beside_a_failure_word() -> None:
    """u07 (Cursor): "which one-time setup commands build …"; n05 (Cline): "which command
    did we use to type-check … and show only errors" asks for a command, not an error."""
    from breadcrumb.query_api.recall.question import analyze_query

    assert "command" in analyze_query("Which one-time setup commands build the repo?").kinds
    question = "Which command did we use to type-check the project and show only errors?"
    assert not analyze_query(question).failure  # the errors say what the command does
    text = 'npx tsc --noEmit 2>&1 | findstr /i "error"\nno errors left'
    scores = _scores(question, text)
    assert max(scores, key=scores.__getitem__).startswith("npx tsc")

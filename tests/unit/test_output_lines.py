"""What real sessions need of the word-exact cut: an output line is about the call that
made it, a patch line about the file of its header; a line said again is said once; the
budget goes to the best lines of all followed ranges and of the passages found outside
them; a tool's error code is an error; "which command" asks for a command line."""

from __future__ import annotations

from breadcrumb.processors.calls import calls_of
from breadcrumb.processors.hints import extract_typed_values
from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.query_api.recall.extract.cut import best_lines, extract_lines
from breadcrumb.query_api.recall.passages import Extract, Found, Line, Passage
from breadcrumb.query_api.recall.sources import found_ranges
from breadcrumb.query_api.recall.stages import Candidate
from breadcrumb.topics.records import Event, Observation, SourceRange

NPM_OUTPUT = "\n".join([
    "Command failed with exit code 1.",
    "npm warn ERESOLVE overriding peer dependency",
    "npm error code ERESOLVE",
    "npm error While resolving: next-auth@5.0.0-beta.31",
    "npm error   node_modules/next-auth/node_modules/@auth/core",
    "npm error     @auth/core@\"0.41.2\" from next-auth@5.0.0-beta.31",
    "npm error       next-auth@\"5.0.0-beta.31\" from the root project",
    "npm error peerOptional nodemailer@\"^7.0.7\" from next-auth@5.0.0-beta.31",
    "npm error   next-auth@\"5.0.0-beta.31\" from the root project",
    "npm error   peerOptional nodemailer@\"^7.0.7\" from next-auth@5.0.0-beta.31",
    "npm error     next-auth@\"5.0.0-beta.31\" from the root project",
])


def _event(index: int, kind: str, content: str, **attrs: str) -> Event:
    role = {"tool_call": "assistant", "message": "assistant"}.get(kind, "tool")
    return Event(event_id=f"e{index}", user_id="u", thread_id="t", ts="2026-11-01T00:00:00Z",
                 role=role, kind=kind, content=content, index=index, attrs=dict(attrs))


def test_results_pair_with_their_calls() -> None:
    events = [
        _event(0, "tool_call", "ls", tool_use_id="a"),
        _event(1, "tool_call", "cat x", tool_use_id="b"),
        _event(2, "tool_result", "x's text", tool_use_id="b"),  # by id, out of order
        _event(3, "tool_result", "file list"),  # no id: the oldest call still waiting
        _event(4, "message", "done"),
        _event(5, "tool_call", "pytest"),
        _event(6, "message", "a new turn"),  # what was not answered never will be
        _event(7, "tool_result", "orphan"),
    ]
    assert calls_of(events) == {"e2": "cat x", "e3": "ls"}


def test_the_error_code_line_of_the_install_the_question_names() -> None:
    events = [_event(0, "tool_call", "npm install next-auth@beta bcryptjs"),
              _event(1, "tool_result", NPM_OUTPUT)]
    question = "What npm error code did installing next-auth@beta fail with?"
    cut = extract_lines(question, events, 120, estimate_tokens, calls=calls_of(events))
    assert "npm error code ERESOLVE" in cut.text.splitlines()


def test_the_output_of_the_call_the_question_names() -> None:
    events = [_event(0, "tool_call", "npm install left-pad"),
              _event(1, "tool_result", "npm error code E404"),
              _event(2, "tool_call", "npm install next-auth@beta"),
              _event(3, "tool_result", "npm error code ERESOLVE")]
    question = "What npm error code did installing next-auth@beta fail with?"
    budget = estimate_tokens("npm error code ERESOLVE")  # room for one of the two
    cut = extract_lines(question, events, budget, estimate_tokens, calls=calls_of(events))
    assert cut.text == "npm error code ERESOLVE"
    blind = extract_lines(question, events, budget, estimate_tokens)
    assert blind.text == "npm error code E404"  # without its call, the first one ties


def test_a_line_said_again_is_kept_once() -> None:
    said = "src/app/page.tsx(252,98): error TS2304: Cannot find name 'buttonVariants'."
    events = [_event(i, "tool_result", f"Output:\n{said}") for i in range(3)]
    cut = extract_lines("which name could tsc not find in the page?", events, 200,
                        estimate_tokens)
    assert cut.text.splitlines().count(said) == 1


def test_the_budget_goes_to_the_best_lines_of_all_ranges() -> None:
    def line(i: int, text: str, score: float) -> Line:
        return Line(f"e{i}", i, 0, len(text), text, score)

    first = Extract((line(0, "weak one two three", 1.0), line(1, "weak four five six", 1.0)), 8)
    second = Extract((line(9, "make simulate uvm_verbosity=UVM_LOW", 5.0),), 4)
    kept = best_lines([first, second], 12, estimate_tokens)  # the strong line + nothing
    assert [ln.text for ln in kept[1]] == ["make simulate uvm_verbosity=UVM_LOW"]
    assert sum(estimate_tokens(ln.text) for lines in kept for ln in lines) <= 12


def test_a_tools_error_code_is_an_error_value() -> None:
    assert ("error", "ERESOLVE") in extract_typed_values("npm error code ERESOLVE")
    assert ("error", "E404") in extract_typed_values("npm ERR! code E404")
    assert ("error", "TS2304") in extract_typed_values("a.ts(1,2): error TS2304: Cannot find")
    assert not any(k == "error" for k, _v in extract_typed_values("the error code is fine"))


PATCH = "\n".join([
    "*** Begin Patch",
    "*** Update File: web/vite.config.ts",
    "+  resolver: 'workspace-root',",
    "*** Add File: Cargo.toml",
    "+[workspace]",
    '+resolver = "2"',
    "*** End Patch",
])


def test_a_patch_line_is_about_the_file_of_its_header() -> None:
    patch = Event(event_id="p", user_id="u", thread_id="t", ts="2026-11-01T00:00:00Z",
                  role="assistant", kind="file_edit", content=PATCH, index=0)
    budget = estimate_tokens('+resolver = "2"')  # room for one line
    cut = extract_lines("What resolver did we set in Cargo.toml?", [patch],
                        budget, estimate_tokens)
    assert cut.text == '+resolver = "2"'


def test_a_chunk_of_a_patch_is_an_edit() -> None:
    chunk = Passage("p", 0, 0, PATCH)  # a chunk hit has no kind: the headers tell
    budget = estimate_tokens('+resolver = "2"')
    cut = extract_lines("What resolver did we set in Cargo.toml?", [chunk],
                        budget, estimate_tokens)
    assert cut.text == '+resolver = "2"'


def test_which_command_asks_for_a_command_line() -> None:
    events = [_event(0, "message", "Let me fix the task-master state."),
              _event(1, "tool_call", "npx task-master init --yes --skip-install")]
    budget = max(estimate_tokens(e.content) for e in events)  # room for one of the two
    cut = extract_lines("Which command did we use to reinitialise task-master?", events,
                        budget, estimate_tokens)
    assert cut.text == "npx task-master init --yes --skip-install"


def test_passages_found_outside_the_followed_ranges_are_cut_too() -> None:
    def found(mid: str, eid: str, text: str, sparse: float) -> Found:
        return Found(Passage(eid, 0, 0, text), mid, None, sparse)

    ranked = {mid: Candidate(_observation(mid), 1.0, {}) for mid in ("hop", "other")}
    cut = {"hop": [Passage("h1", 0, 0, "already read")]}
    hits = {str(i): f for i, f in enumerate([
        found("hop", "h2", "a line of the followed range", 9.0),
        found("other", "o1", '+resolver = "2"', 8.0),
        found("gone", "g1", "a memory not among the candidates", 7.0)])}
    extra = found_ranges(hits, ranked, cut)
    assert [p.event_id for p in cut["hop"]] == ["h1", "h2"]  # joins its range's passages
    assert [(c.memory.id, [p.event_id for p in ps]) for c, ps in extra] == [("other", ["o1"])]


def _observation(mid: str) -> Observation:
    return Observation(id=mid, user_id="u", project_id=None, summary="s",
                       source_range=SourceRange("t", 0, 0), tags=(), query_hints=(),
                       retrieve_when="", importance=0.5, created_at="2026-11-01T00:00:00Z")


def test_which_test_asks_for_a_test_name() -> None:
    from breadcrumb.query_api.recall.question import analyze_query

    intent = analyze_query("Which server test checks that binding needs a control token?")
    assert {"nodeid", "identifier"} <= intent.kinds


def test_how_did_we_and_start_flags_ask_for_a_command() -> None:
    from breadcrumb.query_api.recall.question import analyze_query

    for question in ("What did we install to add Google Cloud Storage?",
                     "How did we retire the old firebase.ts lib file?",
                     "With which model and flags did I start aider?"):
        assert "command" in analyze_query(question).kinds, question
    assert "command" not in analyze_query("How did Caroline feel after the race?").kinds


def test_a_command_line_answers_a_command_question_naming_docker() -> None:
    from breadcrumb.query_api.recall.extract.semantic import holds_kind
    from breadcrumb.query_api.recall.question import analyze_query

    intent = analyze_query("Which command upgraded the module in the docker container?")
    line = {"text": "docker exec odoo-web-1 odoo -d postgres -u search_leads --stop-after-init"}
    assert holds_kind([{"lines": [line]}], intent)  # "docker" asks for no image here
    assert not holds_kind([{"lines": [{"text": "Now upgrade the module in Docker:"}]}], intent)


def test_how_many_asks_for_the_count_line() -> None:
    events = [_event(0, "tool_call", "pnpm gen:docs"),
              _event(1, "tool_result", "Reading schema files for the docs pages\n"
                                       "Wrote 4 schema page(s)\nDone in 1.2s")]
    question = "How many schema pages did gen-schema-docs write?"
    budget = estimate_tokens("Reading schema files for the docs pages")  # room for one
    cut = extract_lines(question, events, budget, estimate_tokens)
    assert cut.text == "Wrote 4 schema page(s)"


def test_the_importers_closing_note_is_no_evidence() -> None:
    note = "end of imported codex session 019df370 (FundWise-codex-session.jsonl)"
    events = [_event(0, "message", "We exported the FundWise session."),
              Event(event_id="end", user_id="u", thread_id="t", ts="2026-11-01T00:00:00Z",
                    role="system", kind="session_end", content=note, index=1)]
    cut = extract_lines("Which FundWise session did we export?", events, 200, estimate_tokens)
    assert cut.text == "We exported the FundWise session."


def test_graded_meets_a_test_named_grade() -> None:
    from breadcrumb.query_api.recall.lines.scoring import score_exact
    from breadcrumb.query_api.recall.passages import Passage as P

    line = "pytest test_outputs.py::test_compile_and_grade"
    scored = score_exact("Which step graded the solution?", [P("e", 0, 0, line)])
    assert [ln.text for ln in scored] == [line]  # "graded" -> "grade", a word of its name


def test_a_file_read_before_its_edit_is_not_the_current_value() -> None:
    from breadcrumb.query_api.recall.lines.edits import removed_lines

    old = "export const EMAIL_RE = /^[^@\\s]+@[^@\\s]+$/i;"
    new = "export const EMAIL_RE = /^[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\\.)+[A-Za-z]{2,}$/;"
    diff = f"--- a/src/auth/email.ts\n+++ b/src/auth/email.ts\n@@ -1 +1 @@\n-{old}\n+{new}"
    assert removed_lines([diff]) == frozenset({old})
    # a chunk of a unified diff (no kind) is an edit: its + line is the added one
    from breadcrumb.query_api.recall.lines.scoring import score_exact

    scored = score_exact("What is EMAIL_RE in email.ts?", [Passage("d", 3, 0, diff)])
    best = max(scored, key=lambda ln: ln.score)
    assert best.text == f"+{new}"


def test_a_long_line_said_again_with_a_few_words_changed_is_packed_once() -> None:
    """s02 (MunsellSpace): a task-master command, its ``[INFO]`` echo and the same command
    with ``--tag=dev``, 105-139 tokens each, filled the budget the 3-token answer needed."""
    prompt = ("Review future development roadmap: Review the future_development.md document "
              "to evaluate and prioritize planned features for MunsellSpace library expansion, "
              "temperature bias, semantic overlays and centroid calculations")
    said = [f'npx task-master add-task --prompt="{prompt}"',
            f'[INFO] Adding new task with prompt: "{prompt}"',
            f'npx task-master add-task --tag=dev --prompt="{prompt}"']
    lines = [Line("e1", 1, 0, len(said[0]), said[0], 6.0),
             Line("e2", 2, 0, len(said[1]), said[1], 5.0),
             Line("e3", 3, 0, len(said[2]), said[2], 6.0),
             Line("e4", 4, 0, 15, "Version: 0.37.1", 4.0)]
    cost = max(estimate_tokens(t) for t in said)
    assert min(estimate_tokens(t) for t in said) >= 30  # long lines
    kept = best_lines([Extract(tuple(lines), 0)], 2 * cost + 5, estimate_tokens)[0]
    assert [ln.text for ln in kept] == [said[0], "Version: 0.37.1"]
    # short lines that share words are not near repeats: both are packed
    short = (Line("e5", 5, 0, 20, "port 5432 on db", 2.0),
             Line("e6", 6, 0, 20, "port 5432 on db2", 2.0))
    assert len(best_lines([Extract(short, 0)], 100, estimate_tokens)[0]) == 2

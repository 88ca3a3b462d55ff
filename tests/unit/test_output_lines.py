"""An output line is about the call that made it; a line said again is said once; the
budget goes to the best lines of all followed ranges; a tool's error code is an error."""

from __future__ import annotations

from breadcrumb.processors.hints import extract_typed_values
from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.query_api.recall.extract.calls import calls_of
from breadcrumb.query_api.recall.extract.cut import best_lines, extract_lines
from breadcrumb.query_api.recall.passages import Extract, Line
from breadcrumb.topics.records import Event

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

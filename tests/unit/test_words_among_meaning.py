"""Lines by meaning with the word-exact cut's tool lines among them (held-out 2's kn1,
kx3: a terraform plan's summary line and an ``ls`` error, each holding the question's
words, lost to prose of a closer chunk when only meaning chose)."""

from __future__ import annotations

from breadcrumb.processors.lexical import query_terms
from breadcrumb.query_api.recall.extract import tool_lines
from breadcrumb.query_api.recall.lines.scoring import line_pool
from breadcrumb.query_api.recall.passages import Found, Line, Passage
from breadcrumb.query_api.recall.question import analyze_query

QUESTION = ("After clearing the old terraform state, what did terraform plan report it "
            "would add, change and destroy in the new dev project?")
PLAN = "Plan: 27 to add, 0 to change, 0 to destroy."
PROSE = ("The current terraform state file references resources in the OLD project; "
         "clear the terraform state so the new dev project is a fresh deployment.")


def _pool(words: dict[tuple[str, int], float] | None) -> list[str]:
    found = [Found(Passage("prose", 1, 0, PROSE), "m1", 0.90),
             Found(Passage("plan", 2, 0, f"Terraform will perform the following actions:\n{PLAN}"),
                   "m1", 0.80)]
    pool = line_pool(found, query_terms(QUESTION), analyze_query(QUESTION), {}, words=words)
    return [pool.line[i][2] for i in pool.order]


def test_a_word_exact_line_is_lifted_by_its_share_of_the_best_word_score() -> None:
    assert _pool(None)[0] == PROSE  # by meaning alone the closer chunk's prose wins
    start = len("Terraform will perform the following actions:\n")
    assert _pool({("plan", start): 1.0})[0] == PLAN
    assert _pool({("plan", start): 0.0})[0] == PROSE  # no word score, no lift


def test_tool_lines_keep_what_a_tool_printed_and_leave_messages_to_meaning() -> None:
    kinds = {"said": "message", "ran": "tool_result", "edit": "file_edit",
             "init": "tool_call", "end": "session_end"}
    lines = [("m1", Line(eid, 0, 0, len(PLAN), PLAN, 1.0))
             for eid in ("said", "ran", "edit", "end", "far")]
    # one word of the question (the tool's name) is no answer however it ranks by words
    lines.append(("m1", Line("init", 0, 0, 14, "terraform init", 1.0)))
    kept = [ln.event_id for _m, ln in tool_lines(QUESTION, lines, kinds)]
    # a message is found by meaning; a line of another range (kind unknown) is left too
    assert kept == ["ran", "edit"]


def test_a_stopword_a_question_word_derives_is_no_word_held() -> None:
    # "used" also asks its verb forms, among them "us": a line holding "us" and one more
    # word of the question holds one word, not two
    question = "Which docker image was used for the worker?"
    kinds = {"out": "tool_result"}
    line = "docker pulled it for us"
    lines = [("m1", Line("out", 0, 0, len(line), line, 1.0))]
    assert tool_lines(question, lines, kinds) == []
    line = "docker pulled the worker image"
    lines = [("m1", Line("out", 0, 0, len(line), line, 1.0))]
    assert len(tool_lines(question, lines, kinds)) == 1


def test_a_line_of_punctuation_alone_is_no_candidate() -> None:
    """kp2: ``.`` and ``>`` of a close chunk cost a token each and filled the answer."""
    question = "What efficiency figure did the grading report show?"
    found = [Found(Passage("e", 1, 0, ".\n>\n});\nEfficiency:   26.810 coverage%/μs"), "m1", 0.9)]
    pool = line_pool(found, query_terms(question), analyze_query(question), {})
    assert [pool.line[i][2] for i in pool.order] == ["Efficiency:   26.810 coverage%/μs"]

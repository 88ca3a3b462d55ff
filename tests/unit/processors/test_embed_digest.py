"""processors.embed_digest: which text each chunk's dense vector is made of."""

from __future__ import annotations

import pytest

from breadcrumb.processors.embed_digest import (
    DIGEST_MAX_CHARS,
    HEAD_LINES,
    LINE_CHARS,
    MEMORY_ABOUT_MAX_CHARS,
    MEMORY_MAX_TOKENS,
    changed_line,
    dense_column,
    dense_texts,
    digest,
    informative_line,
    memory_dense_text,
    to_embed,
)
from breadcrumb.processors.embed_select import LONG_EVENT_CHUNKS
from breadcrumb.processors.tokens import estimate_tokens
from tests.support.chunks import chunks


def long_log() -> str:
    lines = ["$ make test", "collecting 400 items"]
    lines += [f"tests/test_x.py::test_case_{i} PASSED" for i in range(400)]
    lines[123] = "tests/test_x.py::test_case_121 FAILED - AssertionError: 3 != 4"
    lines[300] = "DeprecationWarning: pkg_resources is deprecated"
    lines += ["=============== 1 failed, 399 passed in 2.10s ===============", "exit 1"]
    return "\n".join(lines) + "\n"


def test_informative_and_changed_lines() -> None:
    assert informative_line("Traceback (most recent call last):")
    assert informative_line("WARNING: disk almost full")
    assert informative_line("=== 3 failed, 10 passed ===")
    assert informative_line("Ran 12 tests in 0.3s")
    assert not informative_line("tests/a.py::test_x PASSED [ 40%]")
    assert changed_line("+    timeout = 60") and changed_line("-    timeout = 30")
    assert not changed_line("+++ b/app.py") and not changed_line("--- a/app.py")
    assert not changed_line("+") and not changed_line(" context line")


def test_digest_keeps_head_tail_errors_summary_in_order_and_is_bounded() -> None:
    text = long_log()
    summary = digest(text)
    assert len(summary) <= DIGEST_MAX_CHARS
    lines = summary.splitlines()
    assert lines[:2] == ["$ make test", "collecting 400 items"]  # the head
    assert "test_case_121 FAILED - AssertionError: 3 != 4" in summary  # the error
    assert "DeprecationWarning: pkg_resources is deprecated" in summary  # the warning
    assert "=== 1 failed, 399 passed in 2.10s ===" in lines  # the summary, rulers squeezed
    assert lines[-1] == "exit 1"  # the tail
    assert lines.index("$ make test") < lines.index(
        "tests/test_x.py::test_case_121 FAILED - AssertionError: 3 != 4") < lines.index("exit 1")
    assert "test_case_200 PASSED" not in summary  # a progress line of the middle
    assert digest(text) == summary  # deterministic


def test_digest_of_a_diff_keeps_changed_lines() -> None:
    body = ["--- a/app/config.py", "+++ b/app/config.py", "@@ -10,7 +10,7 @@"]
    body += [f" context line {i}" for i in range(60)]
    body += ["-    timeout = 30", "+    timeout = 60"]
    body += [f" more context {i}" for i in range(60)]
    summary = digest("\n".join(body))
    assert "-    timeout = 30".replace("    ", " ") in summary
    assert "+ timeout = 60" in summary
    assert "context line 30" not in summary


def test_digest_edge_cases() -> None:
    assert digest("") == "" and digest("   \n\n  \t\n") == ""
    huge = "x" * 5000  # one line: its beginning, cut at the line bound
    assert digest(huge) == "x" * LINE_CHARS
    repeated = "\n".join(["same line"] * 50)
    assert digest(repeated) == "same line"  # a repeated line once
    short = "\n".join(f"line {i}" for i in range(HEAD_LINES))
    assert digest(short) == short
    many_errors = "\n".join(f"ERROR number {i} " + "y" * 60 for i in range(100))
    assert len(digest(many_errors)) <= DIGEST_MAX_CHARS
    assert len(digest(many_errors, max_chars=100)) <= 100


def test_dense_texts_by_kind() -> None:
    log = long_log()
    pieces = [log[i:i + 500] for i in range(0, len(log), 500)]
    items = (chunks("msg", ["Please fix the failing test."])
             + chunks("call", ['Bash {"command": "make test"}'])
             + chunks("out", pieces)
             + chunks("small", ["ok\n"])
             + chunks("other", ["no kind given"]))
    kinds = {"msg": "message", "call": "tool_call", "out": "tool_result",
             "small": "tool_result"}
    texts = dense_texts(items, kinds)
    assert texts[0] == "Please fix the failing test."  # a message: as it is
    assert texts[1] == 'Bash {"command": "make test"}'  # a short tool call: as it is
    out = texts[2:2 + len(pieces)]
    failing = next(i for i, piece in enumerate(pieces) if "FAILED" in piece)
    assert failing > 0
    assert out[0] == digest(log)  # a long output: one digest, on its first chunk
    assert out[failing] == pieces[failing]  # the chunk of its first error: its own text
    others = [t for i, t in enumerate(out) if i not in (0, failing)]
    assert others == [None] * (len(pieces) - 2)  # no dense vector for the rest
    assert texts[-2] == "ok\n"  # a short output: as it is
    assert texts[-1] == "no kind given"  # unknown kind: treated as a message
    assert to_embed(texts) == [t for t in texts if t is not None]
    assert dense_texts(items, kinds) == texts  # deterministic (replays: same points)
    assert dense_texts([], {}) == []


def test_long_tool_call_and_file_edit_are_digested_long_message_is_not() -> None:
    body = "\n".join(f"+ line {i} of the new file" for i in range(200))
    pieces = [body[i:i + 1000] for i in range(0, len(body), 1000)]
    for kind in ("tool_call", "file_edit", "test_result"):
        texts = dense_texts(chunks("e", pieces), {"e": kind})
        assert texts[0] == digest(body)  # no error line: on the first chunk
        assert texts[1:] == [None] * (len(pieces) - 1)
    said = [f"paragraph {i} of a long answer" for i in range(LONG_EVENT_CHUNKS)]
    texts = dense_texts(chunks("m", said), {"m": "message"})
    assert texts == said  # a message of up to LONG_EVENT_CHUNKS chunks: every chunk


def test_blank_long_output_gets_no_dense_vector() -> None:
    texts = dense_texts(chunks("e", [" " * 400, "\n" * 400]), {"e": "tool_result"})
    assert texts == [None, None]


def test_dense_column_places_vectors() -> None:
    assert dense_column(["a", None, "b"], [[1.0], [2.0]]) == [[1.0], None, [2.0]]
    with pytest.raises(ValueError, match="1 vectors for 2 dense texts"):
        dense_column(["a", None, "b"], [[1.0]])


def test_memory_dense_text_keeps_what_the_range_is_about_and_the_first_hints() -> None:
    about = ("Fixed the flaky checkout test", "When a question is about checkout", "coding")
    hints = ("retry.py", "ci.yml")
    observation = "\n".join([*about, " ".join(hints)])  # Observation.embedding_text's shape
    assert memory_dense_text(about, hints) == observation  # nothing cut: the same text
    many = [f"path/to/file_{i}.py" for i in range(400)]
    text = memory_dense_text(about, many)
    assert estimate_tokens(text) <= MEMORY_MAX_TOKENS + 2  # the joining spaces
    assert text.startswith("\n".join(about) + "\n")
    kept = text.split("\n")[-1].split(" ")
    assert kept == many[: len(kept)] and 0 < len(kept) < len(many)  # whole hints, in order
    # what the range is about is kept even past the hint budget; hints then are left out
    long_summary = ("word " * 390).strip()
    assert memory_dense_text((long_summary,), many, max_tokens=100) == long_summary + "\n"
    assert len(memory_dense_text(("x" * 5000,), ())) == MEMORY_ABOUT_MAX_CHARS + 1  # hard cut

"""Test runs read from tool output, and how the observer describes a log-only range."""

from __future__ import annotations

from typing import Any

import pytest

from breadcrumb.eval.corpus import FAILING_NODE, big_pytest_log
from breadcrumb.processors.observer import ObserverConfig, observe
from breadcrumb.processors.test_runs import read_test_run
from breadcrumb.topics.records import ClosedRange, Event, SourceRange

RERUN = (
    "F" + " " * 20 + "[100%]\n"
    "    def test_apply_coupon_rounding():\n"
    ">       assert apply_coupon(3999, rate=0.5) == 2000\n"
    "E       AssertionError: assert 1999 == 2000\n\n"
    "tests/test_checkout.py:42: AssertionError\n"
    f"FAILED {FAILING_NODE} - AssertionError: assert 1999 == 2000\n1 failed in 0.31s"
)
JEST = (
    "FAIL src/cart/total.test.ts\n  ● total › rounds half up\n\n"
    "    TypeError: Cannot read properties of undefined (reading 'price')\n\n"
    "PASS src/cart/add.test.ts\n"
    "Tests:       1 failed, 41 passed, 42 total\nTime:        3.2 s"
)
GO = "=== RUN   TestParse\n--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 1\nFAIL\n"


def _event(content: str, index: int = 0, kind: str = "tool_result", **attrs: Any) -> Event:
    return Event.from_dict({
        "event_id": f"e{index}", "user_id": "u", "thread_id": "t", "index": index,
        "ts": "2024-05-14T15:00:00Z", "role": "tool" if kind != "message" else "user",
        "kind": kind, "content": content, "attrs": attrs,
    })


def _observe(events: list[Event]) -> Any:
    rng = SourceRange("t", events[0].index, events[-1].index)
    closed = ClosedRange("u", None, rng, tuple(e.event_id for e in events), "oversized")
    return observe(events, closed, ObserverConfig())


def test_full_pytest_log_names_its_one_failing_test_and_counts() -> None:
    log = big_pytest_log()
    run = read_test_run([_event(log, command="pytest -v tests/", exit_code=1)])
    assert run is not None
    assert run.failing == (FAILING_NODE,)
    assert run.counts == "1 failed, 1999 passed" and run.full_suite
    assert all(v in log for v in run.values())  # verbatim slices only


def test_targeted_rerun_is_not_the_full_suite_and_keeps_the_error() -> None:
    run = read_test_run([_event(RERUN, command=f"pytest {FAILING_NODE} -x -q", exit_code=1)])
    assert run is not None and not run.full_suite
    assert run.failing == (FAILING_NODE,)
    assert run.errors == ("AssertionError: assert 1999 == 2000",)
    assert run.counts == "1 failed"


@pytest.mark.parametrize(("content", "command", "failing", "full"), [
    (JEST, "npx jest", "src/cart/total.test.ts", True),
    (GO, "go test ./...", "TestParse", False),
])
def test_jest_and_go_outputs(content: str, command: str, failing: str, full: bool) -> None:
    run = read_test_run([_event(content, command=command, exit_code=1)])
    assert run is not None and run.failing == (failing,) and run.full_suite is full


def test_passing_run_and_non_test_output() -> None:
    ok = read_test_run([_event("2000 passed in 41.88s", kind="test_result", exit_code=0)])
    assert ok is not None and not ok.failing and ok.full_suite
    assert "failing test" not in ok.descriptors(["en"]) and "test run" in ok.descriptors(["en"])
    assert read_test_run([_event("server listening on :3000", command="npm run dev")]) is None
    assert read_test_run([_event(RERUN, kind="message")]) is None  # talk is not output


def test_log_only_range_is_described_by_its_failure() -> None:
    obs = _observe([_event(big_pytest_log(), index=2, command="pytest -v tests/", exit_code=1)])
    assert FAILING_NODE in obs.summary and "1 failed, 1999 passed" in obs.summary
    assert obs.summary.startswith("output of `pytest -v tests/`")
    assert obs.query_hints[0] == FAILING_NODE  # the failure leads, before 2,000 passing ids
    for word in ("failing test", "full test suite", "test run"):
        assert word in obs.query_hints
    assert "落ちたテスト" not in obs.query_hints  # described in the range's own language
    assert "failing test" in obs.retrieve_when


def test_japanese_tool_output_is_described_in_japanese() -> None:
    out = ("FAILED tests/test_a.py::test_x - AssertionError: 期待値と異なります\n"
           "1 failed, 3 passed in 0.20s")
    obs = _observe([_event(out, kind="test_result", exit_code=1)])
    assert "落ちたテスト" in obs.query_hints and "failing test" not in obs.query_hints
    assert "失敗したテスト: tests/test_a.py::test_x" in obs.summary


def test_range_with_conversation_is_summarised_from_the_talk() -> None:
    events = [_event("CI is red, run the tests", kind="message"),
              _event(RERUN, index=1, command=f"pytest {FAILING_NODE} -x -q", exit_code=1)]
    obs = _observe(events)
    assert obs.summary.startswith("CI is red")
    assert "落ちたテスト" not in obs.query_hints and "failing test" not in obs.query_hints
    assert "AssertionError: assert 1999 == 2000" in obs.query_hints


BUN = (" 48 pass\n 25 fail\n 147 expect() calls\nRan 73 tests across 10 files. [35.84s]\n")
VITEST = (" Test Files  2 failed | 9 passed (11)\n      Tests  2 failed | 85 passed (87)\n"
          "   Start at  10:01:22\n")
CARGO = ("running 12 tests\ntest parse::ok ... ok\n\n"
         "test result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out;"
         " finished in 0.02s\n")
MOCHA = "  api\n    ✓ lists users\n\n  31 passing (2s)\n  1 pending\n"


@pytest.mark.parametrize(("content", "command", "counts", "full"), [
    (BUN, "bun test", "Ran 73 tests across 10 files.", True),
    (VITEST, "npx vitest run", "Tests  2 failed | 85 passed (87)", True),
    (CARGO, "cargo test -p parser",
     "ok. 12 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s", False),
    (MOCHA, "pnpm test", "31 passing (2s)", True),
])
def test_summary_lines_of_other_runners(content: str, command: str, counts: str,
                                        full: bool) -> None:
    run = read_test_run([_event(content, command=command, exit_code=0)])
    assert run is not None
    assert run.counts == counts and counts in content  # a verbatim slice of the output
    assert run.full_suite is full

"""What a test run's output says: failing tests, error lines, counts, and words for it.

A range that holds only tool output (typically an oversized log that the segmenter
gave a range of its own) has no conversation to summarise, so the observer asks this
module what the run says: which tests failed and how (verbatim lines of the output),
the result counts (``1 failed, 1999 passed``), whether the whole suite ran, and a few
plain descriptors ("failing test", "全テスト", ...) that questions about the run use.
pytest, jest/vitest, go test and cargo test outputs are read. Pure and offline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from breadcrumb.topics.records import Event

#: Commands that run tests (also read from ``attrs.command``).
TEST_COMMAND = re.compile(r"\b(pytest|jest|vitest|mocha|(?:npm|pnpm|yarn|bun|deno) test|go test"
                          r"|cargo test|unittest|rspec)\b")
_OUTPUT_KINDS = frozenset({"tool_result", "test_result"})
_M = re.MULTILINE  # whole-output scans: a 2,000-line log is read in C, not line by line
_FAILING = re.compile(
    r"^(?:(\S+::\S+) (?:FAILED|ERROR)\b"  # pytest -v
    r"|(?:FAILED|ERROR) (\S+::\S+)"  # pytest short summary
    r"|[ \t]*FAIL[ \t]+(\S+\.\w+)[ \t]*$"  # jest / vitest file
    r"|[ \t]*--- FAIL: (\S+)"  # go test
    r"|test (\S+) \.\.\. FAILED$)", _M)  # cargo test
_ERROR_LINE = re.compile(r"^(?:E[ \t]+)?[ \t]*(\w+(?:Error|Exception)(?::.*)?)$", _M)
_COUNTS = re.compile(
    r"^(?:=+ (\d+ (?:failed|passed|errors?)\b.*?) in [\d.]+s\b"  # pytest
    r"|(\d+ (?:failed|passed)\b.*?) in [\d.]+s[ \t]*$"  # pytest -q
    r"|Tests:[ \t]+(.*\d+ total)[ \t]*$"  # jest
    r"|[ \t]*(Tests[ \t]+\d+ (?:failed|passed)\b.*\(\d+\))[ \t]*$"  # vitest
    r"|[ \t]*(Ran \d+ tests? across \d+ files?\.)"  # bun
    r"|test result: ((?:ok|FAILED)\. \d+ passed; \d+ failed\b.*?)[ \t]*$"  # cargo test
    r"|[ \t]*(\d+ passing\b.*?)[ \t]*$)", _M)  # mocha
_COLLECTED = re.compile(r"^collected (\d+) items?", re.MULTILINE)
_NUMBER = re.compile(r"\d+")
_TOTAL = re.compile(r"(\d+) total|^Ran (\d+) tests?|\((\d+)\)$")
#: A command that names one test (``::``, ``-k``, ``-t``, ``-run``) is not a suite run.
_TARGETED = re.compile(r"::|\s-(k|t|run)\s|--testNamePattern|--filter")
FULL_SUITE_MIN = 20  # tests run before a untargeted run counts as "the full suite"
_MAX_FAILING = 10

_WORDS = {
    "en": (("failing test", "failed test", "test failure"), ("test run",), ("full test suite",)),
    "ja": (("失敗したテスト", "落ちたテスト", "テスト失敗"), ("テスト実行",), ("全テスト",)),
}


@dataclass(frozen=True, slots=True)
class TestRun:
    """The reading of one test run's output (every string is a verbatim slice of it)."""

    __test__ = False  # not a pytest class

    command: str
    failing: tuple[str, ...]
    errors: tuple[str, ...]
    counts: str
    full_suite: bool

    def values(self) -> list[str]:
        """The run's exact values, most telling first (failing tests, errors, counts)."""
        return [*self.failing, *self.errors, *([self.counts] if self.counts else [])]

    def descriptors(self, langs: Sequence[str]) -> list[str]:
        """Plain phrases for the run in each of ``langs`` ("en", "ja")."""
        out: list[str] = []
        for lang in langs:
            failed, run, suite = _WORDS.get(lang, _WORDS["en"])
            out += [*(failed if self.failing else ()), *run, *(suite if self.full_suite else ())]
        return out

    def summary(self, ja: bool) -> str:
        """One summary part: counts, and the first failing test with its error."""
        head = ("全テスト実行" if ja else "full test suite run") if self.full_suite else (
            "テスト実行" if ja else "test run")
        text = f"{head}: {self.counts}" if self.counts else head
        if self.failing:
            label = "失敗したテスト: " if ja else "failing test: "
            error = f" ({self.errors[0]})" if self.errors else ""
            text += ("／" if ja else "; ") + label + ", ".join(self.failing[:3]) + error
        return text


def read_test_run(events: Sequence[Event]) -> TestRun | None:
    """The test run of a range: the first output with failures, else the last one."""
    runs = [r for e in events if _is_test_output(e) and (r := _read(e)) is not None]
    if not runs:
        return None
    return next((r for r in runs if r.failing), runs[-1])


def _is_test_output(event: Event) -> bool:
    if event.kind not in _OUTPUT_KINDS:
        return False
    return event.kind == "test_result" or bool(TEST_COMMAND.search(_command(event)))


def _command(event: Event) -> str:
    command = event.attrs.get("command")
    return command if isinstance(command, str) else ""


def _read(event: Event) -> TestRun | None:
    text = event.content
    failing = [_group(m) for m in _FAILING.finditer(_lines_with(text, "FAIL", "ERROR"))]
    errors = list(dict.fromkeys(m.group(1).rstrip() for m in _ERROR_LINE.finditer(
        _lines_with(text, "Error", "Exception"))))
    counted = _COUNTS.search(_lines_with(text, "passed", "failed", "total", "Ran ", "passing"))
    counts = _group(counted) if counted else ""
    command = _command(event)
    if not (failing or counts or TEST_COMMAND.search(command)):
        return None
    failing = list(dict.fromkeys(failing))[:_MAX_FAILING]
    full = not _TARGETED.search(f" {command} ") and _ran(event.content, counts) >= FULL_SUITE_MIN
    return TestRun(command, tuple(failing), tuple(errors[:3]), counts, full)


def _lines_with(text: str, *needles: str) -> str:
    """The lines of ``text`` holding a needle, in order (found by ``str.find``: fast)."""
    starts: set[int] = set()
    for needle in needles:
        pos = text.find(needle)
        while pos >= 0:
            start = text.rfind("\n", 0, pos) + 1
            starts.add(start)
            end = text.find("\n", pos)
            pos = text.find(needle, end) if end >= 0 else -1
    return "\n".join(text[s:_line_end(text, s)] for s in sorted(starts))


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


def _group(m: re.Match[str]) -> str:
    return next(g for g in m.groups() if g)


def _ran(content: str, counts: str) -> int:
    collected = _COLLECTED.search(content[:4000])
    if collected:
        return int(collected.group(1))
    total = _TOTAL.search(counts)
    return int(_group(total)) if total else sum(int(n) for n in _NUMBER.findall(counts))


@lru_cache(maxsize=256)
def counts(counted: str) -> re.Pattern[str]:
    """A count of ``counted`` on a line: ``Ran 73 tests``, ``1773 modules transformed``,
    ``Wrote 4 schema page(s)`` (a number, at most two words, then the thing), or the
    thing, then its count: vitest's ``Tests  40 passed (40)``, jest's ``Tests: 3 failed``."""
    thing = re.escape(counted)
    return re.compile(rf"(?i)(?<![\w.])\d[\d,]*\s+(?:[\w-]+\s+){{0,2}}{thing}"
                      rf"|\b{thing}s?:?\s+\d[\d,]*\s+(?:passed|failed|skipped|total|pass|fail)\b")

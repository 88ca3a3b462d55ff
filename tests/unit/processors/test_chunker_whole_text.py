"""The chunker's one-count path (issue 14): with ``estimate_tokens`` a text whose lines
surely fit one chunk is counted once instead of line by line. It must give exactly the
spans of the line-by-line path, for every text and budget."""

from __future__ import annotations

import random

from breadcrumb.processors.chunker import _Counter
from breadcrumb.processors.tokens import estimate_fits, estimate_tokens

PIECES = ["word", "x", "longidentifier_name", "  ", "\n", "\r\n", "\r", "\x0b", "\x0c",
          "\x1c", "\t", "==", "(", "é", "漢", "42", " \n", "\n\n", "   \n  ", "a.b/c"]


def _texts(seed: int, count: int) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 60)))
            for _ in range(count)]


def test_the_one_count_path_gives_the_line_by_line_spans() -> None:
    used = 0
    for budget in (1, 2, 3, 5, 8, 16, 40, 256):
        fast = _Counter(estimate_tokens, budget)
        slow = _Counter(lambda text: estimate_tokens(text), budget)  # not the same function
        for text in _texts(budget, 400):
            assert fast.spans(text) == slow.spans(text), (budget, text)
            used += estimate_fits(text, budget) is not None
    assert used > 100  # the one-count path was really taken (184 of 3,200 here)


def test_estimate_fits_bounds_the_sum_over_lines() -> None:
    for text in _texts(7, 2000):
        lines = sum(estimate_tokens(line) for line in text.splitlines(keepends=True))
        for budget in (1, 4, 16, 64):
            got = estimate_fits(text, budget)
            if got is not None:
                assert got == estimate_tokens(text) and lines <= budget
    assert estimate_fits("", 10) is None
    assert estimate_fits("漢字", 10) is None  # non-ASCII: the line-by-line path
    assert estimate_fits("a b\nc", 10) == 3

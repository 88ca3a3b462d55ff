"""The summary-line test of ``informative`` is the ``(?im)^`` pattern it replaced: the same
answer on every text (random line mixes and the awkward cases)."""

from __future__ import annotations

import random
import re

from breadcrumb.processors import embed_select

#: The pattern as it was (one multiline search).
_MULTILINE = re.compile(r"(?im)^" + embed_select._SUMMARY_LINE)


def _summary(text: str) -> bool:
    return (embed_select._SUMMARY_FIRST.match(text) is not None
            or embed_select._SUMMARY_AFTER_NEWLINE.search(text) is not None)


def test_summary_lines_are_the_multiline_patterns() -> None:
    pieces = ["=== 3 failed, 1 passed ===", "summary", "Totals", "ran 3 tests", "4 passed",
              " \t", "\n", "\r\n", "x", "==", "=", "===", "ran", " tests", "é", "ſummary",
              "\u212a", "RAN 12 TESTS", "===a===", "5 warnings", "Finished", "resultsx", "٣"]
    rng = random.Random(14)
    texts = ["", "\n", "summary", "  summary\n", "x summary", "x\nsummary", "x\n\tTotal:",
             "\nran 1 test", "=== a ===\n", "====\n===="]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
              for _ in range(20000)]
    for text in texts:
        assert _summary(text) == (_MULTILINE.search(text) is not None), repr(text)

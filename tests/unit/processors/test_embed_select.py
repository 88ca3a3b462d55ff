"""processors.embed_select: which chunks of a memory get a dense vector."""

from __future__ import annotations

from breadcrumb.processors.embed_select import (
    HEAD_CHUNKS,
    LONG_EVENT_CHUNKS,
    MAX_INFORMATIVE_CHUNKS,
    TAIL_CHUNKS,
    dense_mask,
    informative,
)
from tests.support.chunks import chunks


def test_informative_lines() -> None:
    assert informative("a\nTraceback (most recent call last):\n")
    assert informative("tests/a.py::t FAILED")
    assert informative("x\n==== 1 failed, 1999 passed in 41.27s ====")
    assert informative("Ran 12 tests in 0.3s")
    assert informative("Summary: 3 files changed")
    assert not informative("tests/a.py::test_x PASSED    [ 40%]")  # a progress line
    assert not informative("copying build/lib/x.py")
    assert informative("TIMED OUT after 30 s") and informative("Connection Refused")
    assert informative("naïve café: Traceback")  # not ASCII: the regex decides
    assert not informative("naïve progress: 40%")


def test_short_events_are_embedded_whole() -> None:
    items = chunks("e1", ["progress line"] * LONG_EVENT_CHUNKS) + chunks("e2", ["hi"])
    assert dense_mask(items) == [True] * len(items)
    assert dense_mask([]) == []


def test_long_event_keeps_head_tail_and_informative_chunks() -> None:
    texts = [f"step {i} ok" for i in range(40)]
    texts[17] = "step 17\nERROR: disk full"
    texts[30] = "=== 3 failed, 10 passed ==="
    items = chunks("short", ["hello"]) + chunks("log", texts)
    mask = dense_mask(items)
    assert mask[0]  # the short event
    log = mask[1:]
    picked = [i for i, chosen in enumerate(log) if chosen]
    assert picked == [*range(HEAD_CHUNKS), 17, 30, *range(40 - TAIL_CHUNKS, 40)]


def test_many_informative_chunks_are_capped_and_spread() -> None:
    texts = [f"case {i} FAILED" for i in range(100)]
    mask = dense_mask(chunks("log", texts))
    middle = [i for i in range(HEAD_CHUNKS, 100 - TAIL_CHUNKS) if mask[i]]
    assert len(middle) == MAX_INFORMATIVE_CHUNKS
    assert middle[0] < 20 and middle[-1] > 70  # spread over the log, not its first lines
    assert sum(mask) == HEAD_CHUNKS + TAIL_CHUNKS + MAX_INFORMATIVE_CHUNKS
    assert dense_mask(chunks("log", texts)) == mask  # deterministic

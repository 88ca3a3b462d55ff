"""Chunker: verbatim offsets, token bound, big logs, ids."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from breadcrumb.processors.chunker import ChunkerConfig, chunk_events
from breadcrumb.processors.ids import chunk_id, event_point_id, memory_id
from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.topics.records import Chunk, Event

MEM = memory_id("u1", "t1", 0, 9)


def KEEP(max_tokens: int) -> ChunkerConfig:  # noqa: N802 - reads as a config
    return ChunkerConfig(max_tokens, keep_repeats=True)


def ev(content: str, index: int = 0, event_id: str | None = None) -> Event:
    return Event(
        event_id=event_id or f"e{index}",
        user_id="u1",
        thread_id="t1",
        ts="2024-05-01T00:00:00Z",
        role="tool",
        kind="tool_result",
        content=content,
        project_id="p1",
        index=index,
    )


def with_overhead(text: str) -> int:
    """A tokenizer-like counter: 2 special tokens per call, not additive."""
    return 2 + len(text.split()) + text.count("\n")


def superadditive(text: str) -> int:
    """A counter where the whole costs more than its parts (forces re-splitting)."""
    return math.ceil(len(text) ** 1.5 / 10)


def check_chunks(
    events: list[Event], chunks: list[Chunk], max_tokens: int, count: Callable[[str], int]
) -> None:
    """``chunks`` (cut with repeats kept) tile each event's content verbatim, in bound; the
    default cut is the same chunks but for those whose text an earlier one holds."""
    held: set[str] = set()
    firsts = []
    for c in chunks:
        if c.text not in held:
            held.add(c.text)
            firsts.append(c)
    assert chunk_events(events, MEM, ChunkerConfig(max_tokens), count) == firsts
    for event in events:
        own = [c for c in chunks if c.event_id == event.event_id]
        assert "".join(c.text for c in own) == event.content  # tiles the content in order
        pos = 0
        for c in own:
            assert event.content[c.char_start : c.char_end] == c.text  # verbatim
            assert c.char_start == pos and c.char_end > c.char_start
            pos = c.char_end
            assert c.tokens == count(c.text) <= max_tokens
            assert (c.event_index, c.user_id, c.thread_id, c.project_id, c.memory_id) == (
                event.index,
                "u1",
                "t1",
                "p1",
                MEM,
            )
            assert c.id == chunk_id(MEM, event.event_id, c.char_start)
    assert len({c.id for c in chunks}) == len(chunks)


text_st = st.text(
    alphabet=st.sampled_from(list("ab cd\n\r\t.=_x") + ["你", "好", "한", "\u2028", "🙂"]),
    max_size=400,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(text_st, min_size=1, max_size=4), st.integers(1, 40))
def test_offsets_are_verbatim_and_bounded(contents: list[str], max_tokens: int) -> None:
    events = [ev(text, i) for i, text in enumerate(contents)]
    chunks = chunk_events(events, MEM, KEEP(max_tokens), estimate_tokens)
    check_chunks(events, chunks, max_tokens, estimate_tokens)


@settings(max_examples=100, deadline=None)
@given(text_st, st.integers(3, 30))
def test_bound_holds_for_a_counter_with_overhead(content: str, max_tokens: int) -> None:
    events = [ev(content)]
    chunks = chunk_events(events, MEM, KEEP(max_tokens), with_overhead)
    check_chunks(events, chunks, max_tokens, with_overhead)


@settings(max_examples=100, deadline=None)
@given(text_st, st.integers(2, 30))
def test_bound_holds_for_a_superadditive_counter(content: str, max_tokens: int) -> None:
    events = [ev(content)]
    chunks = chunk_events(events, MEM, KEEP(max_tokens), superadditive)
    check_chunks(events, chunks, max_tokens, superadditive)


def test_lines_are_packed_and_never_split_when_they_fit() -> None:
    lines = [f"line {i:02d} ok.\n" for i in range(100)]  # 4 tokens each
    content = "".join(lines)
    chunks = chunk_events([ev(content)], MEM, ChunkerConfig(max_tokens=40), estimate_tokens)
    assert [c.text.count("\n") for c in chunks] == [10] * 10
    assert all(c.text.endswith("\n") for c in chunks)


def test_chunks_never_span_events() -> None:
    events = [ev("a b\nc d\n", 0), ev("e f\n", 1)]
    chunks = chunk_events(events, MEM, ChunkerConfig(max_tokens=256), estimate_tokens)
    assert [(c.event_id, c.text) for c in chunks] == [("e0", "a b\nc d\n"), ("e1", "e f\n")]


def test_a_text_the_memory_already_holds_gives_no_chunk() -> None:
    """Issue 49: a command run again, a line printed twice: the first copy is the chunk."""
    events = [ev("pytest -q tests/test_a.py\n", 0), ev("1 failed\n", 1),
              ev("pytest -q tests/test_a.py\n", 2),
              ev("collected 3 items, 1 passed\n1 failed\n", 3)]
    cfg = ChunkerConfig(max_tokens=11)  # the last event's two lines do not fit one chunk
    chunks = chunk_events(events, MEM, cfg, estimate_tokens)
    assert [(c.event_id, c.text) for c in chunks] == [
        ("e0", "pytest -q tests/test_a.py\n"), ("e1", "1 failed\n"),
        ("e3", "collected 3 items, 1 passed\n")]
    assert all(events[c.event_index].content[c.char_start:c.char_end] == c.text
               for c in chunks)
    kept = chunk_events(events, MEM, KEEP(11), estimate_tokens)
    assert [c.event_id for c in kept] == ["e0", "e1", "e2", "e3", "e3"]
    other = chunk_events(events[2:], memory_id("u1", "t1", 2, 3), cfg, estimate_tokens)
    assert [c.event_id for c in other] == ["e2", "e3", "e3"]  # per memory, not per thread


def test_empty_content_gives_no_chunk() -> None:
    assert chunk_events([ev("")], MEM, ChunkerConfig(), estimate_tokens) == []


def test_long_line_splits_at_whitespace() -> None:
    content = " ".join(f"word{i:04d}" for i in range(200))  # 200 words of 2 tokens
    chunks = chunk_events([ev(content)], MEM, ChunkerConfig(max_tokens=20), estimate_tokens)
    assert all(c.text.endswith(" ") for c in chunks[:-1])  # cuts after whitespace
    check_chunks([ev(content)], chunks, 20, estimate_tokens)


def test_unindexed_event_is_refused() -> None:
    event = Event.from_dict({**ev("x").to_dict(), "index": None})
    with pytest.raises(ValueError, match="no index"):
        chunk_events([event], MEM, ChunkerConfig(), estimate_tokens)


def test_2000_line_log_is_fast_and_bounded() -> None:
    content = "".join(
        f"2024-05-01T12:{i // 60 % 60:02d}:{i % 60:02d} INFO pytest[{i}] tests/test_auth.py::"
        f"test_domain_{i} PASSED\n"
        for i in range(2000)
    )
    assert len(content) > 100_000
    events = [ev(content, 7)]
    started = time.perf_counter()
    chunks = chunk_events(events, MEM, KEEP(256), estimate_tokens)
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, f"{elapsed:.2f}s for 2,000 lines"
    check_chunks(events, chunks, 256, estimate_tokens)
    assert all(c.text.endswith("\n") for c in chunks)  # line-aware: cuts at line ends
    assert sum(c.tokens for c in chunks) / len(chunks) > 200  # packed, not one per line


def test_one_huge_line_without_whitespace_is_fast_and_bounded() -> None:
    content = "QmFzZTY0" * 15_000 + " tail\n" + "x" * 50_000  # 120k chars, no spaces
    events = [ev(content)]
    started = time.perf_counter()
    chunks = chunk_events(events, MEM, KEEP(256), estimate_tokens)
    elapsed = time.perf_counter() - started
    assert elapsed < 2.0, f"{elapsed:.2f}s for a 170k-char line"
    check_chunks(events, chunks, 256, estimate_tokens)


def test_a_character_over_budget_is_the_documented_exception() -> None:
    chunks = chunk_events([ev("ab")], MEM, ChunkerConfig(max_tokens=1), lambda t: 5 * len(t))
    assert [(c.text, c.tokens) for c in chunks] == [("a", 5), ("b", 5)]


def test_ids_are_deterministic_uuids() -> None:
    assert memory_id("u1", "t1", 0, 9) == MEM
    assert memory_id("u1", "t1", 0, 10) != MEM
    assert memory_id("u1", "t1/0", 9, 9) != memory_id("u1/t1", "0", 9, 9)
    assert chunk_id(MEM, "e1", 0) != chunk_id(MEM, "e1", 1)
    assert event_point_id("u1", "e1") != event_point_id("u2", "e1")
    for value in (MEM, chunk_id(MEM, "e1", 0), event_point_id("u1", "e1")):
        assert uuid.UUID(value).version == 5

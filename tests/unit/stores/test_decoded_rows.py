"""The decoded-memory LRU of stores.sql.schema: compact keys, a bound, content-exact."""

from __future__ import annotations

from breadcrumb.stores.sql.schema import DecodedRows, observation_to_row
from breadcrumb.topics.records import Observation, SourceRange


def _row(mid: str, summary: str = "s", updated_at: str = "2025-01-01T00:00:00Z") -> tuple:
    o = Observation(id=mid, user_id="alice", project_id=None, kind="episode", summary=summary,
                    source_range=SourceRange("t1", 0, 1), tags=("a",), query_hints=("h",),
                    retrieve_when="", importance=0.5, status="active", tier="provisional",
                    created_at="2025-01-01T00:00:00Z")
    return observation_to_row(o, updated_at)


def test_an_identical_row_is_decoded_once() -> None:
    cache = DecodedRows(8)
    first = cache.get(_row("m1"))
    assert cache.get(_row("m1")) is first
    assert first.summary == "s" and first.tags == ("a",)


def test_a_changed_row_with_the_same_id_and_time_is_decoded_afresh() -> None:
    cache = DecodedRows(8)
    cache.get(_row("m1"))
    changed = cache.get(_row("m1", summary="re-derived"))  # same updated_at, other content
    assert changed.summary == "re-derived"


def test_the_least_recently_used_row_goes_first_and_clear_empties() -> None:
    cache = DecodedRows(2)
    a = cache.get(_row("a"))
    cache.get(_row("b"))
    assert cache.get(_row("a")) is a  # a is now the most recently used
    cache.get(_row("c"))  # evicts b
    assert len(cache) == 2
    assert cache.get(_row("a")) is a
    cache.cache_clear()
    assert len(cache) == 0
    assert cache.get(_row("a")) is not a

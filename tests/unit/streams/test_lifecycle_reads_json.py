"""``json_copy`` is ``json.loads(json.dumps(value))`` (what a kept row's JSON column holds)."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from breadcrumb.streams.lifecycle.reads import json_copy

_KEYS = st.one_of(st.text(max_size=8), st.integers(-5, 5), st.booleans(), st.none(),
                  st.floats(allow_nan=False, width=32))
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12),
              st.floats(allow_nan=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.lists(inner, max_size=4).map(tuple),
                            st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=20)


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (``1 == 1.0 == True`` is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isinf(a):
        return a == b
    return bool(a == b)


@given(_VALUES)
def test_json_copy_is_a_json_round_trip(value: Any) -> None:
    assert _same(json_copy(value), json.loads(json.dumps(value)))


def test_json_copy_of_a_memory_metadata_is_a_new_object() -> None:
    meta = {"merged_ranges": {"m2": {"thread_id": "t", "start_index": 0, "end_index": 3}},
            "tags": ("a", "b")}
    copy = json_copy(meta)
    assert copy == {"merged_ranges": meta["merged_ranges"], "tags": ["a", "b"]}
    assert copy["merged_ranges"] is not meta["merged_ranges"]

"""Deterministic ids: the fast UUID5 is exactly ``uuid.uuid5`` over the JSON of the parts."""

from __future__ import annotations

import json
import uuid

from hypothesis import given
from hypothesis import strategies as st

from breadcrumb.processors.ids import BREADCRUMB_NAMESPACE, chunk_id, event_point_id, memory_id


def _reference(*parts: str | int) -> str:
    return str(uuid.uuid5(BREADCRUMB_NAMESPACE, json.dumps(list(parts), ensure_ascii=False)))


@given(st.text(), st.text(), st.integers(min_value=0, max_value=10**12))
def test_ids_are_uuid5_of_the_json_parts(a: str, b: str, n: int) -> None:
    assert chunk_id(a, b, n) == _reference("chunk", a, b, n)
    assert memory_id(a, b, n, n + 1) == _reference("memory", a, b, n, n + 1)
    assert event_point_id(a, b) == _reference("event", a, b)
    assert uuid.UUID(chunk_id(a, b, n)).version == 5


def test_a_known_id_never_changes() -> None:
    assert memory_id("u", "t", 0, 9) == _reference("memory", "u", "t", 0, 9)
    assert chunk_id("m", "認証", 3) == _reference("chunk", "m", "認証", 3)

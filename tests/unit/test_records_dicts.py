"""The records' to_dict build the dict dataclasses.asdict builds (keys, order, values),
without its recursive deep copy; Observation's has lists for its tuples."""

from __future__ import annotations

from dataclasses import asdict

from breadcrumb.topics.records import Fact, MemoryStatusChange, Observation, SourceRange


def _same(record: object, expected: dict) -> None:
    data = record.to_dict()  # type: ignore[attr-defined]
    assert data == expected
    assert list(data) == list(expected)


def test_scalar_records_are_asdict() -> None:
    for record in (SourceRange("t", 1, 4), Fact("env:A", "1", "e", 2),
                   MemoryStatusChange("m", "u", "active", "provisional", "2025-01-01T00:00:00Z",
                                      "pipeline", "created", None, "m0")):
        _same(record, asdict(record))


def test_observation_to_dict_is_asdict_with_lists() -> None:
    meta = {"merged_ranges": {"m2": {"thread_id": "t", "start_index": 0, "end_index": 3}},
            "hints": ["a", ("b", 1)]}
    obs = Observation("m", "u", None, "s", SourceRange("t", 0, 3), ("x", "y"), ("q",), "when",
                      0.5, "2025-01-01T00:00:00Z", facts=(Fact("k", "v", "e", 1),),
                      metadata=meta)
    expected = {**asdict(obs), "tags": ["x", "y"], "query_hints": ["q"],
                "facts": [{"key": "k", "value": "v", "event_id": "e", "event_index": 1}]}
    _same(obs, expected)
    data = obs.to_dict()
    data["metadata"]["merged_ranges"]["m2"]["end_index"] = 9  # a copy: the record keeps its own
    assert obs.metadata["merged_ranges"]["m2"]["end_index"] == 3
    assert Observation.from_dict(obs.to_dict()) == obs

"""Chunk.to_dict builds the same dict as dataclasses.asdict (without the deep copy)."""

from __future__ import annotations

from dataclasses import asdict

from breadcrumb.topics.records import Chunk


def test_chunk_to_dict_is_asdict() -> None:
    chunk = Chunk("c", "m", "u", None, "t", "e", 3, 10, 20, "text\n", 2)
    assert chunk.to_dict() == asdict(chunk)
    assert list(chunk.to_dict()) == list(asdict(chunk))
    assert Chunk.from_dict(chunk.to_dict()) == chunk

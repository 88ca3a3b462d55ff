"""stores.vectors.edge.collections: the cluster sink's Qdrant Edge store, one directory per
collection prefix (a generation), and the store id its consumer group names."""

from __future__ import annotations

from pathlib import Path

import pytest

from breadcrumb.processors.lexical import sparse_vector
from breadcrumb.stores.embedders.hashing import HashEmbedder
from breadcrumb.stores.ports import SearchFilter
from breadcrumb.stores.vectors.edge.collections import EdgeCollections, store_id
from breadcrumb.stores.vectors.search_batch import SearchRequest
from breadcrumb.topics.records import Observation, SourceRange


def _memory(mid: str, text: str) -> Observation:
    return Observation(id=mid, user_id="alice", project_id=None, summary=text,
                       source_range=SourceRange("t1", 0, 0), tags=(), query_hints=(),
                       retrieve_when="", importance=0.5, created_at="2026-01-01T00:00:00Z")


def _ids(index: EdgeCollections, text: str) -> list[str]:
    dense = HashEmbedder().embed_query(text)
    hits = index.search_batch([SearchRequest("memories", SearchFilter(user_id="alice"), 5,
                                             dense=dense, with_payload=False)])[0]
    return [h.id for h in hits]


def test_each_prefix_has_its_own_collections_and_drop_removes_only_its_own(
        tmp_path: Path) -> None:
    embedder = HashEmbedder()
    main = EdgeCollections(tmp_path, "breadcrumb", embedder.dim)
    main.ensure()
    gen = main.sibling("breadcrumb__G1")
    gen.ensure()
    assert (main.prefix, gen.prefix) == ("breadcrumb", "breadcrumb__G1")
    main.upsert_memories([_memory("00000000-0000-0000-0000-000000000001", "email regex")],
                         embedder.embed_passages(["email regex"]),
                         [sparse_vector("email regex")])
    assert _ids(main, "email regex") and not _ids(gen, "email regex")
    gen.drop()
    assert not (tmp_path / "breadcrumb__G1").exists()
    assert _ids(main, "email regex")
    main.close()


def test_a_prefix_must_be_a_plain_directory_name(tmp_path: Path) -> None:
    for bad in ("../up", "a/b", "", ".."):
        with pytest.raises(ValueError, match="not a directory name"):
            EdgeCollections(tmp_path, bad, 8)


def test_the_store_id_is_written_once_and_a_new_store_gets_another(tmp_path: Path) -> None:
    first = store_id(tmp_path / "a")
    assert store_id(tmp_path / "a") == first
    assert store_id(tmp_path / "b") != first

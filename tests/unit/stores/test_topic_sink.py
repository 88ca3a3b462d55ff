"""The vectors topic's records (``stores.vectors.sink.topic``) without a broker: what a worker's
TopicVectorIndex sends, replayed by the sink's ``apply_records`` on a real index (qdrant-client
local mode), gives the points a direct upsert gives; the split-store refusal reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qdrant_client import QdrantClient

from breadcrumb.infra.cluster_stores import split_store_reason
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.stores.vectors.server.index import QdrantServerIndex
from breadcrumb.stores.vectors.sink.topic import TopicVectorIndex, apply_records
from breadcrumb.streams.service import IngestService
from breadcrumb.streams.state import CapturingDeadLetters, DictStateStore
from breadcrumb.topics.records import Event, FlushMarker
from tests.conftest import example_events


def _points(index: QdrantServerIndex) -> dict[str, Any]:
    out = {}
    for name in ("memories", "chunks"):
        points, _ = index.client.scroll(index.collection(name), limit=10_000,
                                        with_vectors=True, with_payload=True)
        out.update({f"{name}:{p.id}": ([round(x, 5) for x in p.vector.get("dense", [])],
                                        p.vector["sparse"].indices,
                                        [round(x, 5) for x in p.vector["sparse"].values],
                                        p.payload) for p in points})
    return out


def _derive(tmp_path: Path, index: Any) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    store.open()
    service = IngestService(store.events, store.memories,
                            CapturingDeadLetters(store.dead_letters), DictStateStore(), index,
                            HashEmbedder(dim=32), lambda: "2026-11-30T00:00:00+00:00")
    events = example_events()
    with store.transaction(), service.batched() as block:
        for e in events:
            block.handle(Event.from_dict(e))  # entries reach a block decoded
        for thread in sorted({e["thread_id"] for e in events}):
            block.handle(FlushMarker("demo", thread, "2026-11-30T00:00:00Z", "flush").to_dict())
    store.close()


def test_records_replayed_by_the_sink_give_the_points_of_a_direct_upsert(
        tmp_path: Path) -> None:
    direct = QdrantServerIndex(lambda: QdrantClient(path=str(tmp_path / "d")), "t", 32)
    direct.ensure()
    (tmp_path / "a").mkdir()
    _derive(tmp_path / "a", direct)
    sent: list[tuple[bytes, bytes]] = []
    topic = TopicVectorIndex(sent.extend)
    (tmp_path / "b").mkdir()
    _derive(tmp_path / "b", topic)
    assert topic.sent == len(sent) and sent
    assert {k[:2] for k, _v in sent} == {b"m/", b"c/"}
    sink = QdrantServerIndex(lambda: QdrantClient(path=str(tmp_path / "s")), "t", 32)
    sink.ensure()
    assert apply_records(sink, [v for _k, v in sent]) == len(sent)
    assert apply_records(sink, [v for _k, v in sent]) == len(sent)  # replayed: no change
    expected = _points(direct)
    assert expected and _points(sink) == expected
    memory = next(k for k in expected if k.startswith("memories:")).split(":", 1)[1]
    topic.set_memory_payload(memory, {"status": "superseded"})
    apply_records(sink, [sent[-1][1]])
    assert sink.client.retrieve(sink.collection("memories"), [memory])[0].payload[
        "status"] == "superseded"
    direct.close()
    sink.close()


def test_a_generations_records_fill_its_own_collections_never_mains(tmp_path: Path) -> None:
    """A replay's generation derives the same memory ids as main: its records carry its
    collection prefix (and keys that compaction keeps apart), the sink writes them to
    that generation's collections of the same store."""
    main: list[tuple[bytes, bytes]] = []
    gen: list[tuple[bytes, bytes]] = []
    for name, sent, prefix in (("a", main, "t"), ("b", gen, "t__G")):
        (tmp_path / name).mkdir()
        _derive(tmp_path / name, TopicVectorIndex(sent.extend, prefix=prefix))
    assert main and len(gen) == len(main)
    assert not {k for k, _v in main} & {k for k, _v in gen}  # compaction keeps both
    sink = QdrantServerIndex(lambda: QdrantClient(path=str(tmp_path / "s")), "t", 32)
    sink.ensure()
    apply_records(sink, [v for _k, v in main])
    only_main = _points(sink)
    interleaved = [v for pair in zip(gen, main, strict=True) for _k, v in pair]
    assert apply_records(sink, interleaved) == len(interleaved)
    assert _points(sink) == only_main  # main's collections: unchanged by the generation
    sibling = sink.sibling("t__G")
    assert _points(sibling) == only_main  # same ids and vectors, its own collections
    memory = next(k for k in only_main if k.startswith("memories:")).split(":", 1)[1]
    TopicVectorIndex(gen.extend, prefix="t__G").set_memory_payload(memory, {"status": "x"})
    apply_records(sink, [gen[-1][1]])
    assert sibling.client.retrieve(sibling.collection("memories"), [memory])[0].payload[
        "status"] == "x"
    assert sink.client.retrieve(sink.collection("memories"), [memory])[0].payload[
        "status"] != "x"
    sink.close()


def test_only_a_local_mode_worker_joining_a_live_group_is_refused(tmp_path: Path) -> None:
    local = Settings(mode="cluster", data_dir=tmp_path, vector_store="qdrant")
    assert split_store_reason(local, 0) is None
    reason = split_store_reason(local, 2) or ""
    assert "already has 2 worker(s)" in reason and "split the vectors" in reason
    assert split_store_reason(local.with_overrides(vector_store="topic"), 2) is None
    assert split_store_reason(local.with_overrides(qdrant_url="http://q:6333"), 2) is None


def test_a_restarted_worker_is_known_by_its_vector_folder(tmp_path: Path) -> None:
    from breadcrumb.infra.cluster_stores import store_client_id

    one = Settings().with_overrides(data_dir=tmp_path / "w1")
    assert store_client_id(one) == store_client_id(one.with_overrides(worker_id="other"))
    assert store_client_id(one) != store_client_id(one.with_overrides(data_dir=tmp_path / "w2"))


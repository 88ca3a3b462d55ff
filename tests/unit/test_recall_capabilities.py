"""The optional store abilities recall uses are Protocols checked with isinstance
(stores/ports.py, "capabilities recall uses"); recall probes none with getattr."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from breadcrumb.query_api.recall.chunk_rows import chunk_rows_of
from breadcrumb.stores.ports import (
    BatchedEventReads,
    KeptChunkRows,
    OpenWindowStates,
    Transactional,
)
from breadcrumb.stores.sql.sqlite.store import SqliteStore
from breadcrumb.topics.records import Chunk

RECALL = Path(__file__).resolve().parents[2] / "query_api" / "recall"


def test_the_embedded_store_has_every_capability_recall_uses(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    store.open()
    try:
        for port, capability in ((store.memories, KeptChunkRows), (store.events,
                                 BatchedEventReads), (store.states, OpenWindowStates),
                                 (store.memories, Transactional)):
            assert isinstance(port, capability), capability.__name__
        assert chunk_rows_of(store.memories) == store.memories.get_chunks_by_id
    finally:
        store.close()


class RowsNotKept:
    """A store with the lookup but without kept rows (the MySQL store's shape)."""

    def get_chunks_by_id(self, user_id: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        raise AssertionError("recall must not read chunk texts from this store")


class RowsKeptOff(RowsNotKept):
    KEEPS_ROWS = False


def test_chunk_texts_come_from_the_store_only_where_it_keeps_its_rows() -> None:
    assert not isinstance(RowsNotKept(), KeptChunkRows)
    assert chunk_rows_of(RowsNotKept()) is None
    assert isinstance(RowsKeptOff(), KeptChunkRows)  # the ability, switched off
    assert chunk_rows_of(RowsKeptOff()) is None
    assert chunk_rows_of(object()) is None


def test_no_recall_module_probes_a_store_with_getattr() -> None:
    files = sorted(RECALL.rglob("*.py"))
    assert len(files) > 10  # the package was found
    probes = [f"{f.relative_to(RECALL)}:{n}" for f in files
              for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
              if re.search(r"\b(getattr|hasattr)\(", line)]
    assert probes == []

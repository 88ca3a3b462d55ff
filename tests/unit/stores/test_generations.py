"""The generation catalog: atomic alias, creation, removal rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from breadcrumb.stores.generations.embedded import MAIN, GenerationCatalog


def test_default_is_main_and_switch_is_persisted(tmp_path: Path) -> None:
    catalog = GenerationCatalog(tmp_path)
    assert catalog.current() == MAIN
    paths = catalog.create("g1", {"embedder": "hash"})
    assert paths.sqlite.parent.is_dir() and paths.sqlite.name == "derived.sqlite3"
    assert catalog.current() == MAIN
    catalog.switch("g1")
    assert GenerationCatalog(tmp_path).current() == "g1"
    assert catalog.describe()["generations"]["g1"]["state"] == "current"


def test_removal_rules(tmp_path: Path) -> None:
    catalog = GenerationCatalog(tmp_path)
    catalog.create("g1", {})
    with pytest.raises(ValueError, match="already exists"):
        catalog.create("g1", {})
    catalog.switch("g1")
    with pytest.raises(ValueError, match="is current"):
        catalog.remove("g1")
    catalog.switch(MAIN)
    with pytest.raises(ValueError, match="cannot be removed"):
        catalog.switch("g1") or catalog.remove(MAIN)
    catalog.switch(MAIN)
    catalog.remove("g1")
    assert catalog.names() == [MAIN]
    assert not (tmp_path / "generations" / "g1").exists()
    with pytest.raises(ValueError, match="no generation"):
        catalog.switch("g1")

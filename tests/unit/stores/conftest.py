"""Fixtures shared by the store unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from breadcrumb.stores.sql.sqlite.store import SqliteStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    """An open embedded store on a fresh file (closed after the test)."""
    with SqliteStore(tmp_path / "s.sqlite3") as opened:
        yield opened

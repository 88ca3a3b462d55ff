"""Versioned generations of the embedded derived stores, and the alias that picks one.

The event log (``breadcrumb.sqlite3``'s ``event_log``) is the source of truth. Everything
else is derived and lives in a *generation*: generation ``main`` is the original layout
(derived tables in the log's own file, vectors in ``vectors/``); a replay builds a new
generation under ``generations/<name>/`` and then switches the alias
(``generations.json``, replaced atomically). Old generations stay until removed.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

MAIN = "main"
CATALOG = "generations.json"


@dataclass(frozen=True, slots=True)
class GenerationPaths:
    """Where one generation keeps its SQL and vector files."""

    name: str
    sqlite: Path
    vectors: Path


class GenerationCatalog:
    """Reads and writes ``generations.json`` under a data dir."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.file = data_dir / CATALOG

    def _load(self) -> dict[str, Any]:
        if not self.file.exists():
            return {"current": MAIN, "generations": {MAIN: {"created_at": None}}}
        data: dict[str, Any] = orjson.loads(self.file.read_bytes())
        return data

    def _save(self, data: dict[str, Any]) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_suffix(".json.tmp")
        tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
        os.replace(tmp, self.file)  # atomic: readers see the old or the new alias, never half

    def current(self) -> str:
        return str(self._load()["current"])

    def names(self) -> list[str]:
        return list(self._load()["generations"])

    def describe(self) -> dict[str, Any]:
        return self._load()

    def paths(self, name: str) -> GenerationPaths:
        if name == MAIN:
            return GenerationPaths(MAIN, self.data_dir / "breadcrumb.sqlite3",
                                   self.data_dir / "vectors")
        root = self.data_dir / "generations" / name
        return GenerationPaths(name, root / "derived.sqlite3", root / "vectors")

    def create(self, name: str, info: dict[str, Any]) -> GenerationPaths:
        """Register a new, empty generation (its folder must not exist yet)."""
        data = self._load()
        if name in data["generations"]:
            raise ValueError(f"generation {name!r} already exists")
        paths = self.paths(name)
        paths.sqlite.parent.mkdir(parents=True, exist_ok=False)
        data["generations"][name] = {**info, "state": "building"}
        self._save(data)
        return paths

    def mark(self, name: str, **info: Any) -> None:
        data = self._load()
        data["generations"][name] = {**data["generations"].get(name, {}), **info}
        self._save(data)

    def switch(self, name: str) -> None:
        """Point the alias at ``name`` (atomically)."""
        data = self._load()
        if name not in data["generations"]:
            raise ValueError(f"no generation {name!r}")
        data["current"] = name
        data["generations"][name]["state"] = "current"
        self._save(data)

    def remove(self, name: str) -> None:
        """Delete a generation that is not current (``main``'s log file is never deleted)."""
        data = self._load()
        if name == data["current"]:
            raise ValueError(f"generation {name!r} is current; switch first")
        if name == MAIN:
            raise ValueError("generation 'main' holds the event log and cannot be removed")
        if name not in data["generations"]:
            raise ValueError(f"no generation {name!r}")
        shutil.rmtree(self.paths(name).sqlite.parent, ignore_errors=False)
        del data["generations"][name]
        self._save(data)


def catalog_for(settings: Any) -> Any:
    """The generation catalog of the configured mode: this file (embedded) or the control
    database's tables (cluster, :class:`stores.generations.cluster.ClusterCatalog`). Both
    answer ``current``, ``names``, ``describe`` and ``remove``."""
    if settings.mode == "cluster":
        from breadcrumb.stores.generations.cluster import ClusterCatalog

        return ClusterCatalog(settings)
    return GenerationCatalog(settings.data_dir)

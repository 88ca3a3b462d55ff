"""Versioned generations of the cluster-mode derived stores, and the alias that picks one.

The event log is the ``agent-events`` topic. Every derived store belongs to a
*generation*: ``main`` is the original layout (database ``mysql_database``, collections
``{qdrant_collection_prefix}_*``, Faust app / consumer group ``worker_id``); a replay
builds generation ``G`` in database ``{mysql_database}__G``, collections
``{qdrant_collection_prefix}__G_*`` and consumer group ``{worker_id}__G`` (so it reads the
log from the earliest offset with a table of its own), then switches the alias.

The catalog and the alias live in the control database (``mysql_database``): tables
``bc_generations`` and ``bc_alias``. Switching is one UPDATE in one transaction, so every
reader sees the old or the new generation, never half.
"""

from __future__ import annotations

import json
from typing import Any

import pymysql

from breadcrumb.settings import Settings
from breadcrumb.stores.sql.mysql.store import mysql_store

MAIN = "main"
_CURRENT: tuple[str, tuple[Any, ...]] = (
    "SELECT generation FROM bc_alias WHERE alias = 'current'", ())
_DDL = (
    "CREATE TABLE IF NOT EXISTS bc_generations (name VARCHAR(64) NOT NULL PRIMARY KEY, "
    "state VARCHAR(16) NOT NULL, info TEXT NOT NULL, created_at VARCHAR(40) NOT NULL)",
    "CREATE TABLE IF NOT EXISTS bc_alias (alias VARCHAR(32) NOT NULL PRIMARY KEY, "
    "generation VARCHAR(64) NOT NULL)",
)


def _current(rows: list[tuple[Any, ...]]) -> str:
    return str(rows[0][0]) if rows else MAIN


def generation_settings(settings: Settings, name: str) -> Settings:
    """The settings a worker / query service of generation ``name`` runs with."""
    if name == MAIN:
        return settings
    return settings.with_overrides(
        mysql_database=f"{settings.mysql_database}__{name}",
        qdrant_collection_prefix=f"{settings.qdrant_collection_prefix}__{name}",
        worker_id=f"{settings.worker_id}__{name}",
    )


class ClusterCatalog:
    """``bc_generations`` + ``bc_alias`` in the control database (short-lived connections)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._tables_ready = False  # the DDL runs once per catalog, not on every poll

    def _connect(self, database: str | None) -> Any:
        kwargs = mysql_store(self.settings).db.connect_kwargs()  # same TLS, modes and flags
        kwargs["database"] = database
        return pymysql.connect(**kwargs)

    def _run(self, statements: list[tuple[str, tuple[Any, ...]]]) -> list[list[tuple[Any, ...]]]:
        """Run statements in one transaction; the rows of each."""
        conn = self._connect(self.settings.mysql_database)
        try:
            with conn.cursor() as cur:
                if not self._tables_ready:
                    for ddl in _DDL:
                        cur.execute(ddl)
                    self._tables_ready = True
                conn.begin()
                results = []
                for sql, params in statements:
                    cur.execute(sql, params)
                    results.append(list(cur.fetchall()))
            conn.commit()
            return results
        finally:
            conn.close()

    # --- reads ---------------------------------------------------------------------
    def current(self) -> str:
        return _current(self._run([_CURRENT])[0])

    def describe(self) -> dict[str, Any]:
        alias, rows = self._run([_CURRENT, ("SELECT name, state, info, created_at "
                                            "FROM bc_generations ORDER BY created_at", ())])
        current = _current(alias)
        gens: dict[str, Any] = {MAIN: {"state": "current" if current == MAIN else "old",
                                       "database": self.settings.mysql_database}}
        for name, state, info, created in rows:
            gens[str(name)] = {**json.loads(info), "state": state, "created_at": created}
        return {"current": current, "generations": gens}

    def names(self) -> list[str]:
        return list(self.describe()["generations"])

    # --- writes ----------------------------------------------------------------------
    def create(self, name: str, info: dict[str, Any], created_at: str) -> Settings:
        """Register generation ``name`` (building) and create its database."""
        if name == MAIN or name in self.names():
            raise ValueError(f"generation {name!r} already exists")
        gen = generation_settings(self.settings, name)
        info = {**info, "database": gen.mysql_database,
                "collection_prefix": gen.qdrant_collection_prefix, "consumer_group": gen.worker_id}
        self._run([("INSERT INTO bc_generations (name, state, info, created_at) "
                    "VALUES (%s, 'building', %s, %s)", (name, json.dumps(info), created_at))])
        conn = self._connect(None)
        try:
            with conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE IF NOT EXISTS `{gen.mysql_database}` "
                            "CHARACTER SET utf8mb4")
        finally:
            conn.close()
        return gen

    def mark(self, name: str, state: str, **info: Any) -> None:
        rows = self._run([("SELECT info FROM bc_generations WHERE name = %s", (name,))])[0]
        merged = {**(json.loads(rows[0][0]) if rows else {}), **info}
        self._run([("UPDATE bc_generations SET state = %s, info = %s WHERE name = %s",
                    (state, json.dumps(merged), name))])

    def switch(self, name: str) -> str:
        """Point the alias at ``name`` in one transaction; returns the previous generation."""
        if name not in self.names():
            raise ValueError(f"no generation {name!r}")
        previous = self.current()
        self._run([
            ("INSERT INTO bc_alias (alias, generation) VALUES ('current', %s) "
             "ON DUPLICATE KEY UPDATE generation = VALUES(generation)", (name,)),
            ("UPDATE bc_generations SET state = 'old' WHERE state = 'current'", ()),
            ("UPDATE bc_generations SET state = 'current' WHERE name = %s", (name,)),
        ])
        return previous

    def remove(self, name: str) -> Settings:
        """Forget a generation that is not current and drop its database; returns its
        settings so the caller can drop its collections too."""
        if name == MAIN:
            raise ValueError("generation 'main' holds the control tables and cannot be removed")
        if name == self.current():
            raise ValueError(f"generation {name!r} is current; switch first")
        if name not in self.names():
            raise ValueError(f"no generation {name!r}")
        gen = generation_settings(self.settings, name)
        conn = self._connect(None)
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS `{gen.mysql_database}`")
        finally:
            conn.close()
        self._run([("DELETE FROM bc_generations WHERE name = %s", (name,))])
        return gen

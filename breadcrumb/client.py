"""Python client: the same calls over HTTP (a running service) or in-process (a data dir).

``connect(settings)`` talks to the query service that serves this data dir if one is
running (it leaves ``server.json`` there), otherwise opens the data dir itself.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import httpx
import orjson

from breadcrumb.infra.settings import Settings

MARKER = "server.json"


class ClientError(RuntimeError):
    """A request the service refused, with its contract error message."""


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


def write_server_marker(settings: Settings) -> Path:
    """Tell CLI commands on the same data dir where the service listens."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    marker = settings.data_dir / MARKER
    url = f"http://{settings.host}:{settings.port}"
    marker.write_bytes(orjson.dumps({"url": url, "pid": os.getpid()}))
    return marker


def running_server(settings: Settings) -> str | None:
    """The URL of a live service on this data dir, if any."""
    marker = settings.data_dir / MARKER
    if not marker.exists():
        return None
    url = str(orjson.loads(marker.read_bytes())["url"])
    try:
        if httpx.get(f"{url}/healthz", timeout=2.0).status_code < 500:
            return url
    except httpx.HTTPError:
        return None
    return None


def connect(settings: Settings, url: str | None = None) -> Backend:
    """HTTP when a URL is given or a service runs on the data dir, else in-process."""
    target = url or running_server(settings)
    if target:
        return HttpBackend(target)
    return LocalBackend(settings)


def _thread_keys(items: list[Any]) -> list[tuple[str, str]]:
    keys: dict[tuple[str, str], None] = {}
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("user_id"), str) and isinstance(
            item.get("thread_id"), str
        ):
            keys.setdefault((item["user_id"], item["thread_id"]), None)
    return list(keys)


def _submit_batches(submit: Callable[[list[Any]], dict[str, Any]], items: list[Any],
                    batch: int) -> dict[str, Any]:
    """Submit in batches; rejected positions are given in the whole input's numbering."""
    totals: dict[str, Any] = {"accepted": 0, "duplicates": 0, "rejected": []}
    for offset in range(0, len(items), batch):
        part = submit(items[offset: offset + batch])
        totals["accepted"] += part["accepted"]
        totals["duplicates"] += part["duplicates"]
        totals["rejected"] += [{**r, "position": r["position"] + offset} for r in part["rejected"]]
    return totals


def _report(totals: dict[str, Any], bad_lines: list[dict[str, Any]] | None,
            started: float) -> dict[str, Any]:
    totals["rejected"] = list(bad_lines or []) + totals["rejected"]
    totals["seconds"] = round(time.perf_counter() - started, 3)
    return totals


class HttpBackend:
    """The contract over HTTP."""

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url, timeout=timeout)

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        response = self.http.request(method, path, **kw)
        if response.status_code >= 400:
            try:
                message = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text
            raise ClientError(f"{method} {path}: {response.status_code} {message}")
        return response.json()

    def submit(self, items: list[Any]) -> dict[str, Any]:
        response = self.http.post("/v1/events", json={"events": items})
        if response.status_code == 422:  # the whole batch was invalid: still a report
            error = response.json()["error"]
            return {"accepted": 0, "duplicates": 0, "rejected": error.get("rejected", [])}
        if response.status_code >= 400:
            raise ClientError(f"POST /v1/events: {response.status_code} {response.text}")
        result: dict[str, Any] = response.json()
        return result

    def ingest(self, items: list[Any], flush: bool, batch: int, timeout: float,
               bad_lines: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        started = time.perf_counter()
        totals = _submit_batches(self.submit, items, batch)
        if flush:
            for user_id, thread_id in _thread_keys(items):
                self._call("POST", "/v1/flush", json={"user_id": user_id, "thread_id": thread_id})
        self.wait_processed(timeout, "pending" if flush else "unprocessed")
        return _report(totals, bad_lines, started)

    def wait_processed(self, timeout: float, counter: str = "pending") -> None:
        """Poll /v1/stats until ``counter`` reaches 0."""
        deadline = time.monotonic() + timeout
        while self.stats()[counter] > 0:
            if time.monotonic() > deadline:
                raise ClientError(f"events still pending after {timeout} s")
            time.sleep(0.1)

    def recall(self, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/recall", json=body)
        return result

    def recall_source(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /v1/recall_source``: a RecalledEvidence."""
        result: dict[str, Any] = self._call("POST", "/v1/recall_source", json=body)
        return result

    def get_memory(self, user_id: str, memory_id: str) -> dict[str, Any]:
        """``GET /v1/memories/{id}``."""
        result: dict[str, Any] = self._call("GET", f"/v1/memories/{memory_id}",
                                            params={"user_id": user_id})
        return result

    def thread_events(self, user_id: str, thread_id: str, start: int = 0,
                      end: int | None = None) -> list[dict[str, Any]]:
        """``GET /v1/threads/{thread_id}/events``: verbatim events, in index order."""
        params: dict[str, Any] = {"user_id": user_id, "start": start}
        if end is not None:
            params["end"] = end
        path = f"/v1/threads/{quote(thread_id, safe='')}/events"  # ids may hold "/", "?", "%"
        result: list[dict[str, Any]] = self._call("GET", path, params=params)
        return result

    def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/v1/stats")
        return result

    def close(self) -> None:
        self.http.close()


class LocalBackend:
    """The same calls on a runtime built in this process (no server needed)."""

    def __init__(self, settings: Settings) -> None:
        from breadcrumb.infra.bootstrap import build_runtime

        self.runtime = build_runtime(settings)

    def ingest(self, items: list[Any], flush: bool, batch: int, timeout: float,
               bad_lines: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        started = time.perf_counter()
        gateway = self.runtime.gateway
        totals = _submit_batches(lambda part: gateway.submit(part, "cli").to_dict(), items, batch)
        if flush:
            for user_id, thread_id in _thread_keys(items):
                gateway.request_flush(user_id, thread_id, "flush")
        gateway.wait_processed(timeout)
        return _report(totals, bad_lines, started)

    def recall(self, body: dict[str, Any]) -> dict[str, Any]:
        from breadcrumb.query_api.models import RecallRequest

        clean = {k: v for k, v in body.items() if v is not None}
        return self.runtime.recall.recall(RecallRequest(**clean))

    def recall_source(self, body: dict[str, Any]) -> dict[str, Any]:
        """recallMemorySource on the local runtime (same checks as the endpoint)."""
        from breadcrumb.query_api.models import RecallSourceRequest

        req = RecallSourceRequest(**body)
        if req.source_end_index < req.source_start_index:
            raise ClientError("source_end_index is before source_start_index")
        return self.runtime.recall.recall_source(req)

    def get_memory(self, user_id: str, memory_id: str) -> dict[str, Any]:
        memory = self.runtime.memories.get_memory(user_id, memory_id)
        if memory is None:
            raise ClientError(f"no memory {memory_id} for this user")
        return memory.to_dict()

    def thread_events(self, user_id: str, thread_id: str, start: int = 0,
                      end: int | None = None) -> list[dict[str, Any]]:
        last = end if end is not None else start + 999
        return [e.to_dict() for e in self.runtime.raw.get_range(user_id, thread_id, start, last)]

    def stats(self) -> dict[str, Any]:
        from breadcrumb.query_api.app import stats

        return stats(self.runtime)

    def close(self) -> None:
        self.runtime.stop()

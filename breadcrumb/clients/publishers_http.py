"""Publishing events over HTTP (``POST /v1/events``) for agents without Kafka access: the
batches, the retries of 5xx answers and connection errors (the server dedupes by
``event_id``), and the contract's error message for a 4xx (:mod:`.publishers` has the
Kafka publisher and what both share; :mod:`.sdk` re-exports both)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

import httpx

from breadcrumb.clients.publishers import (
    KEY_HINT,
    Backoff,
    IndexCounters,
    InvalidEventError,
    PublishError,
    auth_headers,
    checked,
    dumps,
)


class HttpPublisher:
    """Async publisher over ``POST /v1/events`` for agents without Kafka access.

    Batches of ``batch_size``; 5xx answers and connection errors are retried with
    backoff (the server dedupes by ``event_id``, so a retry is safe); 4xx answers
    raise with the contract's error message.
    """

    def __init__(self, url: str, *, batch_size: int = 500, backoff: Backoff | None = None,
                 timeout: float = 60.0, index_counters: IndexCounters | None = None,
                 api_key: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.headers = auth_headers(api_key)
        self.batch_size = batch_size
        self.backoff = backoff or Backoff()
        self.timeout = timeout
        self.counters = index_counters
        self._http: httpx.AsyncClient | None = None
        self.retried = 0

    async def __aenter__(self) -> HttpPublisher:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        self._http = httpx.AsyncClient(base_url=self.url, timeout=self.timeout,
                                       headers=self.headers)

    async def stop(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def publish(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Send one event; the server's ``{"accepted", "duplicates", "rejected"}``."""
        return await self.publish_many([event])

    async def publish_many(self, events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """Validate all, then POST in batches; totals of the server's answers."""
        items = [checked(event, position) for position, event in enumerate(events)]
        if self.counters is not None:
            items = [checked(self.counters.assign(item), i) for i, item in enumerate(items)]
        totals: dict[str, Any] = {"accepted": 0, "duplicates": 0, "rejected": []}
        for offset in range(0, len(items), self.batch_size):
            part = await self.post_batch(dumps({"events": items[offset:offset
                                                                + self.batch_size]}))
            totals["accepted"] += part["accepted"]
            totals["duplicates"] += part["duplicates"]
            totals["rejected"] += [{**r, "position": r["position"] + offset}
                                   for r in part["rejected"]]
        return totals

    async def post_batch(self, body: bytes) -> dict[str, Any]:
        """POST an already-serialised ``{"events": [...]}`` body, retrying 5xx/connection."""
        if self._http is None:
            raise PublishError("HttpPublisher is not started: use 'async with HttpPublisher(...)'")
        for attempt in range(self.backoff.retries + 1):
            try:
                response = await self._http.post(
                    "/v1/events", content=body, headers={"content-type": "application/json"})
            except httpx.TransportError as exc:
                problem: str = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 500:
                    return _answer(response)
                problem = f"{response.status_code} {response.text[:300]}"
            if attempt == self.backoff.retries:
                raise PublishError(f"POST {self.url}/v1/events failed after "
                                   f"{attempt + 1} attempts: {problem}")
            self.retried += 1
            await asyncio.sleep(self.backoff.delay(attempt))
        raise AssertionError("unreachable")


def _answer(response: httpx.Response) -> dict[str, Any]:
    if response.status_code < 400:
        result: dict[str, Any] = response.json()
        return result
    try:
        error = response.json()["error"]
        message, code = str(error["message"]), str(error.get("code", ""))
    except (ValueError, KeyError, TypeError):
        message, code = response.text[:500], ""
    text = f"POST /v1/events: {response.status_code} {code}: {message}".replace(" : ", ": ")
    if response.status_code == 401:
        text += f" ({KEY_HINT})"
    if response.status_code == 422:
        raise InvalidEventError(text)
    raise PublishError(text)

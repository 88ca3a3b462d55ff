"""The Python SDK: add what agents say and do, recall it later.

    from breadcrumb.sdk import Breadcrumb

    with Breadcrumb(url="http://127.0.0.1:8765", user_id="me") as bc:
        bc.add([{"role": "user", "content": "Use port 6432 for the DB"}], thread_id="s1")
        bc.flush("s1")
        answer = bc.recall("which port does the DB use?")
        answer.memories[0].summary, answer.text  # typed results

``Breadcrumb(kafka="127.0.0.1:9092", url=...)`` publishes to Kafka instead (recall still
asks the query service at ``url``). :class:`AsyncBreadcrumb` is the same client for
``asyncio``; :class:`Breadcrumb` runs it on a private event-loop thread, so the two never
drift apart. ``add`` fills ``event_id`` (deterministic: a retried call is a duplicate),
``ts``, tenant and thread. ``Authorization: Bearer …`` is sent when ``api_key=`` or
``BREADCRUMB_API_KEY`` is set.

This module imports only the standard library, httpx and pydantic; aiokafka is imported
when a Kafka client starts. The lower-level publishers (``Publisher``,
``HttpPublisher``, ``SyncPublisher``, …) are re-exported from :mod:`breadcrumb.clients.publishers`.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

import httpx

from breadcrumb.clients.publishers import (
    KEY_HINT,
    Backoff,
    IndexCounters,
    InvalidEventError,
    Publisher,
    PublishError,
    PublishReceipt,
    SyncPublisher,
    auth_headers,
    checked,
    dumps,
    plainly_valid,
)
from breadcrumb.clients.publishers_http import HttpPublisher
from breadcrumb.clients.sdk_models import (
    AddResult,
    BreadcrumbError,
    Evidence,
    Memory,
    RecallResult,
    Rejected,
    SourceRange,
    build_events,
)
from breadcrumb.topics.loops import run_on
from breadcrumb.topics.names import AGENT_EVENTS
from breadcrumb.topics.records import thread_key

__all__ = ["AddResult", "AsyncBreadcrumb", "Backoff", "Breadcrumb", "BreadcrumbError",
           "Evidence", "HttpPublisher", "IndexCounters", "InvalidEventError", "Memory",
           "PublishError", "PublishReceipt", "Publisher", "RecallResult", "Rejected",
           "SourceRange", "SyncPublisher", "checked", "plainly_valid"]

T = TypeVar("T")
Mode = Literal["auto", "summary", "source"]


class AsyncBreadcrumb:
    """Async client: events over HTTP (``url``) or Kafka (``kafka``), recall over HTTP."""

    def __init__(self, url: str | None = None, *, kafka: str | None = None,
                 api_key: str | None = None, user_id: str | None = None,
                 project_id: str | None = None, agent_id: str | None = None,
                 topic_prefix: str | None = None, timeout: float = 60.0) -> None:
        if url is None and kafka is None:
            url = os.environ.get("BREADCRUMB_URL", "http://127.0.0.1:8765")
        self.url = url.rstrip("/") if url else None
        self.kafka = kafka
        self.user_id = user_id or os.environ.get("BREADCRUMB_USER_ID", "local")
        self.project_id = project_id
        self.agent_id = agent_id
        self.topic_prefix = topic_prefix if topic_prefix is not None else os.environ.get(
            "BREADCRUMB_TOPIC_PREFIX", "")
        self._headers = auth_headers(api_key)
        self._timeout = timeout
        self._http: httpx.AsyncClient | None = None
        self._kafka: Publisher | None = None

    async def __aenter__(self) -> AsyncBreadcrumb:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Open the HTTP client and, for Kafka, connect the producer."""
        if self.url and self._http is None:
            self._http = httpx.AsyncClient(base_url=self.url, timeout=self._timeout,
                                           headers=self._headers)
        if self.kafka and self._kafka is None:
            publisher = Publisher(self.kafka, topic=f"{self.topic_prefix}{AGENT_EVENTS}")
            await publisher.start()
            self._kafka = publisher

    async def close(self) -> None:
        """Deliver what is buffered and disconnect."""
        if self._kafka is not None:
            await self._kafka.stop()
            self._kafka = None
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def add(self, items: Iterable[Mapping[str, Any]], *, thread_id: str,
                  user_id: str | None = None, project_id: str | None = None,
                  agent_id: str | None = None) -> AddResult:
        """Store chat messages or events in a thread (ids and times filled in)."""
        events = build_events(items, user_id=user_id or self.user_id, thread_id=thread_id,
                              project_id=project_id or self.project_id,
                              agent_id=agent_id or self.agent_id,
                              now=datetime.now(UTC))
        ids = [e["event_id"] for e in events]
        if self.kafka:
            await self._publisher().publish_many(events)
            return AddResult(event_ids=ids, accepted=len(events), transport="kafka")
        answer = await self._post("/v1/events", {"events": [checked(e, i)
                                                            for i, e in enumerate(events)]})
        return AddResult(event_ids=ids, **answer)

    async def flush(self, thread_id: str, *, user_id: str | None = None) -> None:
        """Close the thread's open window now, so what was added becomes recallable."""
        user = user_id or self.user_id
        if self.kafka:
            marker = {"_control": "flush", "user_id": user, "thread_id": thread_id,
                      "ts": datetime.now(UTC).isoformat(), "reason": "flush"}
            await self._publisher().send_prepared(
                [(f"flush:{thread_id}", thread_key(user, thread_id).encode(), dumps(marker))])
            return
        await self._post("/v1/flush", {"user_id": user, "thread_id": thread_id})

    async def recall(self, query: str, *, user_id: str | None = None,
                     project_id: str | None = None, k: int = 5, max_tokens: int = 800,
                     mode: Mode = "auto", thread_id: str | None = None,
                     tags: list[str] | None = None, include_superseded: bool = False,
                     include_archived: bool = False, as_of: datetime | str | None = None,
                     now: datetime | str | None = None,
                     read_only: bool = False) -> RecallResult:
        """Retrieve → Decide → Recall → Extract: memories and verbatim evidence.

        ``as_of``: answer as things stood then; ``now``: what relative periods in the
        question ("yesterday", "3週間前") count from (docs/recall-in-time.md).
        ``read_only``: only look (no hit, no TTL touch, no promotion; issue 47)."""
        body = {"user_id": user_id or self.user_id, "query": query, "k": k,
                "max_tokens": max_tokens, "mode": mode, "project_id": project_id,
                "thread_id": thread_id, "tags": tags, "include_superseded": include_superseded,
                "include_archived": include_archived, "as_of": _iso(as_of), "now": _iso(now),
                "read_only": read_only or None}
        return RecallResult.model_validate(await self._post("/v1/recall", _given(body)))

    async def recall_text(self, query: str, *, user_id: str | None = None,
                          max_tokens: int = 800, **options: Any) -> str:
        """The compact brief of a recall (what the MCP tool answers), as text."""
        body = {"user_id": user_id or self.user_id, "query": query, "max_tokens": max_tokens,
                "view": "brief", **options}
        return str((await self._post("/v1/recall", _given(body)))["text"])

    async def recall_source(self, thread_id: str, start_index: int, end_index: int,
                            query: str, *, user_id: str | None = None,
                            max_tokens: int = 800) -> Evidence:
        """The verbatim lines of one source range that answer ``query``."""
        body = {"user_id": user_id or self.user_id, "source_thread_id": thread_id,
                "source_start_index": start_index, "source_end_index": end_index,
                "query": query, "max_tokens": max_tokens}
        return Evidence.model_validate(await self._post("/v1/recall_source", body))

    async def wait_processed(self, timeout: float = 120.0) -> None:
        """Wait until every accepted event has reached the stores (``pending == 0``)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while (await self._get("/v1/stats"))["pending"] > 0:
            if asyncio.get_running_loop().time() > deadline:
                raise BreadcrumbError(f"events still pending after {timeout} s")
            await asyncio.sleep(0.1)

    # ------------------------------------------------------------------ transport
    def _publisher(self) -> Publisher:
        if self._kafka is None:
            raise BreadcrumbError("not started: use 'async with AsyncBreadcrumb(...)'")
        return self._kafka

    def _client(self) -> httpx.AsyncClient:
        if self.url is None:
            raise BreadcrumbError("recall needs the query service: pass url= as well")
        if self._http is None:
            raise BreadcrumbError("not started: use 'async with AsyncBreadcrumb(...)'")
        return self._http

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return _answer(await self._client().post(path, content=dumps(body), headers={
            "content-type": "application/json"}), f"POST {path}")

    async def _get(self, path: str) -> dict[str, Any]:
        return _answer(await self._client().get(path), f"GET {path}")


class Breadcrumb:
    """The blocking client: :class:`AsyncBreadcrumb` on a private event-loop thread."""

    def __init__(self, url: str | None = None, *, kafka: str | None = None,
                 timeout: float = 120.0, **options: Any) -> None:
        self.inner = AsyncBreadcrumb(url, kafka=kafka, **options)
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="breadcrumb-sdk",
                                        daemon=True)
        self._thread.start()
        self._run(self.inner.start())

    def __enter__(self) -> Breadcrumb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return run_on(self._loop, coro, self.timeout)

    def add(self, items: Iterable[Mapping[str, Any]], **options: Any) -> AddResult:
        """See :meth:`AsyncBreadcrumb.add`."""
        return self._run(self.inner.add(list(items), **options))

    def flush(self, thread_id: str, **options: Any) -> None:
        """See :meth:`AsyncBreadcrumb.flush`."""
        self._run(self.inner.flush(thread_id, **options))

    def recall(self, query: str, **options: Any) -> RecallResult:
        """See :meth:`AsyncBreadcrumb.recall`."""
        return self._run(self.inner.recall(query, **options))

    def recall_text(self, query: str, **options: Any) -> str:
        """See :meth:`AsyncBreadcrumb.recall_text`."""
        return self._run(self.inner.recall_text(query, **options))

    def recall_source(self, thread_id: str, start_index: int, end_index: int, query: str,
                      **options: Any) -> Evidence:
        """See :meth:`AsyncBreadcrumb.recall_source`."""
        return self._run(self.inner.recall_source(thread_id, start_index, end_index, query,
                                                  **options))

    def wait_processed(self, timeout: float = 120.0) -> None:
        """See :meth:`AsyncBreadcrumb.wait_processed`."""
        self._run(self.inner.wait_processed(timeout))

    def close(self) -> None:
        """Deliver, disconnect and stop the loop thread."""
        if self._loop.is_running():
            self._run(self.inner.close())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)


def _given(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def _iso(when: datetime | str | None) -> str | None:
    """A request time as the service reads it (ISO 8601; a naive datetime is UTC)."""
    if isinstance(when, datetime):
        return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).isoformat()
    return when


def _answer(response: httpx.Response, what: str) -> dict[str, Any]:
    if response.status_code < 400:
        result: dict[str, Any] = response.json()
        return result
    try:
        message = str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        message = response.text[:500]
    hint = f" ({KEY_HINT})" if response.status_code == 401 else ""
    raise BreadcrumbError(f"{what}: {response.status_code} {message}{hint}")

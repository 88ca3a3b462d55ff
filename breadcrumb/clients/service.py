"""Python client: the same calls over HTTP (a running service) or in-process (a data dir).

``connect(settings)`` talks to the query service that owns this data dir if one is
running, otherwise opens the data dir itself (taking its lock: one owner per data dir,
see ``stores/data_dir.py``). Over HTTP every request carries ``Authorization: Bearer <key>``
when a key is given (``--api-key``, :func:`use_api_key`) or set in ``BREADCRUMB_API_KEY``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
import orjson

from breadcrumb.query_api.backend import Backend
from breadcrumb.stores import data_dir

if TYPE_CHECKING:
    from breadcrumb.settings import Settings

MARKER = data_dir.MARKER
API_KEY_ENV = "BREADCRUMB_API_KEY"
_api_key: str | None = None


def use_api_key(key: str | None) -> None:
    """Use this key for every HTTP request of this process (``--api-key``)."""
    global _api_key
    _api_key = key or None


def api_key_headers(key: str | None = None) -> dict[str, str]:
    """``{"Authorization": "Bearer …"}`` for the given, ``--api-key`` or env key; else ``{}``."""
    chosen = key or _api_key or os.environ.get(API_KEY_ENV, "").strip()
    return {"Authorization": f"Bearer {chosen}"} if chosen else {}


def key_refusal(url: str, headers: Any = None) -> ClientError:
    """The one line for a 401: which key was sent (flag or variable) and what to do."""
    sent = (headers or {}).get("Authorization") or (headers or {}).get("authorization")
    if not sent:
        return ClientError(
            f"{url} needs an API key (401): set {API_KEY_ENV} or pass --api-key "
            "(create one with `breadcrumb keys create --tenant USER --role admin`)")
    source = "--api-key" if _api_key and sent.endswith(_api_key) else API_KEY_ENV
    return ClientError(
        f"{url} refused the API key given by {source} (401: unknown or revoked): check {source}, "
        "or create a key with `breadcrumb keys create`")


def key_tenant(url: str) -> str | None:
    """The tenant of the key this process sends to ``url`` (``GET /v1/identity``), or None
    without a key (or from a service that does not say)."""
    headers = api_key_headers()
    if not headers:
        return None
    try:
        response = httpx.get(f"{url}/v1/identity", timeout=10.0, headers=headers)
    except httpx.HTTPError as exc:
        raise unreachable(url, exc) from exc
    if response.status_code == 401:
        raise key_refusal(url, headers)
    if response.status_code >= 400:
        return None
    key = response.json().get("key") or {}
    return str(key["tenant"]) if key.get("tenant") else None


def default_user(settings: Settings, given: str | None, service: str | None = None) -> str:
    """The tenant a command acts for: ``--user`` when given; through the service at
    ``service`` (a URL) with a key, the key's own tenant; else ``$BREADCRUMB_USER_ID``
    (default ``local``). The one rule of every command (issue 24)."""
    if given:
        return given
    return (key_tenant(service) if service else None) or settings.user_id


def service_url(backend: Any) -> str | None:
    """The URL a backend talks to (None in-process)."""
    return backend.url if isinstance(backend, HttpBackend) else None


def unreachable(url: str, exc: Exception) -> ClientError:
    """The one line for a service that cannot be reached (dead port, wrong host, TLS)."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return ClientError(
        f"cannot reach {url} ({reason}): is `breadcrumb serve` running there? "
        "Check --url, or leave it out to use the data dir")


__all__ = ["Backend", "ClientError", "HttpBackend", "LocalBackend", "api_key_headers",
           "connect", "default_user", "key_refusal", "key_tenant", "locate", "running_server",
           "service_url", "unreachable", "use_api_key", "write_server_marker"]


class ClientError(RuntimeError):
    """A request the service refused, with its contract error message."""


def write_server_marker(settings: Settings) -> Path:
    """Cluster mode (no data dir lock): tell CLI commands where the service listens."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    marker = settings.data_dir / MARKER
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(settings.host, settings.host)
    scheme = "https" if getattr(settings, "ssl_certfile", None) else "http"
    url = f"{scheme}://{f'[{host}]' if ':' in host else host}:{settings.port}"
    marker.write_bytes(orjson.dumps({"url": url, "pid": os.getpid(),
                                     "instance": data_dir.PROCESS_INSTANCE,
                                     "data_dir": str(settings.data_dir.resolve())}))
    return marker


def answers_for(url: str, instance: str, timeout: float = 5.0) -> bool:
    """True when the service at ``url`` reports this ``instance`` (``GET /v1/identity``,
    which touches no store): a port reused by another process, or another data dir's
    service, does not. The request carries this process's key; a service that refuses
    it raises :class:`ClientError` at once (waiting would not change the answer). Without
    a key, the public ``GET /healthz`` (which carries the same instance) is asked."""
    headers = api_key_headers()
    try:
        response = httpx.get(f"{url}/v1/identity", timeout=timeout, headers=headers)
        if response.status_code == 401 and not headers:
            # no key here (an MCP proxy forwarding its callers' keys, or a CLI command whose
            # request will then say a key is needed): the public /healthz has the instance
            response = httpx.get(f"{url}/healthz", timeout=timeout)
    except httpx.HTTPError:
        return False
    if response.status_code == 401:
        raise key_refusal(url, headers)
    try:
        return bool(response.json().get("instance") == instance)
    except (ValueError, AttributeError):
        return False


def running_server(settings: Settings) -> str | None:
    """The URL of a live service on this data dir, if any (cluster mode: ``server.json``
    checked for a live pid and the service's identity; embedded: see :func:`locate`)."""
    marker = settings.data_dir / MARKER
    try:
        info = orjson.loads(marker.read_bytes())
        url, pid, instance = str(info["url"]), int(info["pid"]), str(info.get("instance"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if data_dir.pid_alive(pid) and answers_for(url, instance):
        return url
    return None


def locate(settings: Settings, url: str | None = None) -> tuple[str | None, Any]:
    """Where this command's calls go: ``(url, None)`` for a running service, or
    ``(None, lock)`` to open the data dir here, with its lock already taken.

    Embedded, the data dir's lock decides: free → this process owns the dir (a leftover
    ``server.json`` is stale and removed); held by ``breadcrumb serve`` → its URL, once
    that service answers with the owner's instance id (waiting up to
    ``server_wait_seconds``, never opening the stores meanwhile); held by a process that
    serves no HTTP API → :class:`~infra.data_dir.DataDirBusy` naming its pid.
    """
    if url:
        return url, None
    if settings.mode == "cluster":
        return running_server(settings), None
    deadline = time.monotonic() + settings.server_wait_seconds
    owner = None
    while True:
        lock = data_dir.try_acquire(settings.data_dir)
        if lock is not None:
            if lock.count == 1:
                (lock.data_dir / MARKER).unlink(missing_ok=True)  # left by a dead owner
            return None, lock
        owner = data_dir.read_owner(settings.data_dir) or owner
        if owner is not None and owner.url is None and data_dir.pid_alive(owner.pid):
            raise data_dir.DataDirBusy(settings.data_dir, owner)
        if owner is not None and owner.url and answers_for(owner.url, owner.instance):
            return owner.url, None
        if time.monotonic() > deadline:
            if owner is not None and owner.url:
                raise ClientError(
                    f"data dir {settings.data_dir} is served by {owner.describe()}, which did "
                    f"not answer within {settings.server_wait_seconds:g} s: wait and "
                    f"retry, or stop pid {owner.pid}")
            raise data_dir.DataDirBusy(settings.data_dir, owner)
        time.sleep(0.2)


def connect(settings: Settings, url: str | None = None) -> Backend:
    """HTTP when a URL is given or a service owns the data dir, else in-process."""
    target, lock = locate(settings, url)
    if target:
        return HttpBackend(target)
    return LocalBackend(settings, lock)


def _all_keyed(items: list[Any]) -> bool:
    """Whether every item names its tenant and thread (else the key's tenant fills one in)."""
    return all(isinstance(item, dict) and isinstance(item.get("user_id"), str)
               and isinstance(item.get("thread_id"), str) for item in items)


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

    def __init__(self, url: str, timeout: float = 60.0, api_key: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url, timeout=timeout,
                                 headers=api_key_headers(api_key))

    def _send(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """One request; a dead service or a refused key is a one-line :class:`ClientError`."""
        try:
            response = self.http.request(method, path, **kw)
        except httpx.TransportError as exc:
            raise unreachable(self.url, exc) from None
        if response.status_code == 401:
            raise key_refusal(self.url, self.http.headers)
        return response

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        response = self._send(method, path, **kw)
        if response.status_code >= 400:
            try:
                message = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text
            raise ClientError(f"{method} {path}: {response.status_code} {message}")
        return response.json()

    def submit(self, items: list[Any]) -> dict[str, Any]:
        response = self._send("POST", "/v1/events", json={"events": items})
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
        keys = _thread_keys(items)
        if flush:
            for user_id, thread_id in keys:
                self._call("POST", "/v1/flush", json={"user_id": user_id, "thread_id": thread_id})
        counter = "pending" if flush else "unprocessed"
        if not _all_keyed(items) or not self._wait_threads(keys, timeout, counter):
            self.wait_processed(timeout, counter)
        return _report(totals, bad_lines, started)

    def _wait_threads(self, keys: list[tuple[str, str]], timeout: float, counter: str) -> bool:
        """Poll ``GET /v1/threads/{id}/pending`` until each of these threads' ``counter``
        is 0: an import waits for its own events, not for another import's (issue 29: a
        7-line import waited 226 s behind a large one). False when the service does not
        count a thread's backlog (cluster mode, an older server): wait on /v1/stats then."""
        deadline = time.monotonic() + timeout
        for user_id, thread_id in keys:
            path = f"/v1/threads/{quote(thread_id, safe='')}/pending"
            while True:
                response = self._send("GET", path, params={"user_id": user_id})
                if response.status_code == 404:
                    return False
                if response.status_code >= 400:
                    raise ClientError(f"GET {path}: {response.status_code} {response.text}")
                if int(response.json()[counter]) <= 0:
                    break
                if time.monotonic() > deadline:
                    raise ClientError(f"events still pending after {timeout} s")
                time.sleep(0.1)
        return True

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
        params: dict[str, Any] = {"start": start}
        if user_id:  # absent: the key's tenant
            params["user_id"] = user_id
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

    def __init__(self, settings: Settings, lock: Any = None, embedder: Any = None) -> None:
        from breadcrumb.infra.bootstrap import build_runtime

        self._lock = lock  # the data dir lock taken by locate(), released on close
        try:
            self.runtime = build_runtime(settings, embedder)
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def ingest(self, items: list[Any], flush: bool, batch: int, timeout: float,
               bad_lines: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        started = time.perf_counter()
        gateway = self.runtime.gateway
        if self.runtime.index_builds is not None:  # issue 49: a long import builds too
            self.runtime.index_builds()
        totals = _submit_batches(lambda part: gateway.submit(part, "cli").to_dict(), items, batch)
        if flush:
            for user_id, thread_id in _thread_keys(items):
                gateway.request_flush(user_id, thread_id, "flush")
        gateway.wait_processed(timeout)
        return _report(totals, bad_lines, started)

    def recall(self, body: dict[str, Any]) -> dict[str, Any]:
        from breadcrumb.query_api.brief import brief_view
        from breadcrumb.query_api.models import RecallRequest

        req = RecallRequest(**{k: v for k, v in body.items() if v is not None})
        response = self.runtime.recall.recall(req)
        if req.view == "brief":
            return brief_view(response, req.max_tokens, self.runtime.embedder.count_tokens)
        return response

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
        from breadcrumb.query_api.runtime import stats

        return stats(self.runtime)

    def close(self) -> None:
        try:
            self.runtime.stop()
        finally:
            self._release()

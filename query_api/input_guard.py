"""The HTTP input guard (issue 12): bodies are capped while they stream in, JSON bodies are
checked before any route sees them, and nothing unexpected escapes as a bare 500.

A pure ASGI middleware, so a 200 MB body is never held in memory: past ``limit_body_bytes``
the rest is read and dropped (up to :data:`DRAIN_BYTES`, so the client sees the 413 rather
than a reset), and a ``Content-Length`` over the limit with ``Expect: 100-continue`` is
answered at once. A JSON body (``Content-Type`` absent or ``*json*``) is parsed once with
:func:`processors.json_sanity.loads` and walked by ``json_problem``: lone surrogates,
integers beyond 64 bits, ``NaN`` / ``Infinity`` and nesting beyond ``limit_json_depth``
answer 422 naming the field. The parsed value is left in ``request.state.json_body``.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from breadcrumb.processors.json_sanity import TooDeep, json_problem, loads, printable
from breadcrumb.streams.failure_policy import describe, is_transient

log = logging.getLogger(__name__)

#: How much of an oversized body is read and dropped before the connection is closed.
DRAIN_BYTES = 1 << 30
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_UNSET = object()


def error_response(status: int, code: str, message: str, close: bool = False) -> JSONResponse:
    """The contract's error body."""
    headers = {"connection": "close"} if close else None
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status,
                        headers=headers)


def parse_json_body(raw: bytes, max_depth: int) -> tuple[Any, JSONResponse | None]:
    """``(value, None)`` or ``(None, error response)`` for a JSON request body."""
    try:
        value = loads(raw)
    except TooDeep:
        return None, error_response(422, "invalid_request",
                                    f"body nests deeper than {max_depth} levels (limit_json_depth)")
    except UnicodeDecodeError as exc:
        return None, error_response(400, "invalid_json", f"body is not UTF-8: {exc.reason}")
    except ValueError as exc:
        return None, error_response(400, "invalid_json", f"body is not JSON: {exc}")
    found = json_problem(value, "", max_depth)
    if found is not None:
        where, reason = found
        if "nests deeper" in reason:
            reason = f"{reason} (limit_json_depth)"
        message = f"field '{printable(where)}': {reason}" if where else f"body {reason}"
        return None, error_response(422, "invalid_request", message)
    return value, None


class InputGuard:
    """ASGI middleware: body cap, JSON sanity, last-resort JSON 500."""

    def __init__(self, app: ASGIApp, limit_body_bytes: int, limit_json_depth: int) -> None:
        self.app = app
        self.limit = limit_body_bytes
        self.depth = limit_json_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            if scope["method"] in _BODY_METHODS:
                await self._guarded(scope, receive, tracking_send)
            else:
                await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if is_transient(exc) and not started:  # a store is down: expected, said in a line
                reason = " ".join(describe(exc).split())
                log.warning("%s %s: a store is unavailable (%s)", scope["method"],
                            scope.get("path"), reason)
                await error_response(503, "store_unavailable",
                                     f"a store this request needs is unavailable; retry later "
                                     f"({reason})")(scope, receive, send)
                return
            log.exception("unexpected error on %s %s", scope["method"], scope.get("path"))
            if started:
                raise
            response = error_response(500, "internal_error",
                                      "the server failed on this request; it is logged")
            await response(scope, receive, send)

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.lower(): v for k, v in scope.get("headers", ())}
        declared = _int_or_none(headers.get(b"content-length"))
        if declared is not None and declared > self.limit:
            expects = headers.get(b"expect", b"").lower() == b"100-continue"
            if not expects:
                await _drain(receive, DRAIN_BYTES)
            await self._too_large(scope, receive, send)
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = bool(message.get("more_body", False))
            if len(body) > self.limit:
                if more:
                    await _drain(receive, DRAIN_BYTES)
                await self._too_large(scope, receive, send)
                return
        raw = bytes(body)
        if raw.strip() and _is_json(headers.get(b"content-type")):
            value, refusal = parse_json_body(raw, self.depth)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
            scope.setdefault("state", {})["json_body"] = value
        await self.app(scope, _replay(raw, receive), send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(
            413, "body_too_large",
            f"field 'body': larger than {self.limit} bytes (limit_body_bytes)", close=True)
        await response(scope, receive, send)


def stashed_json(request: Any) -> Any:
    """The body :class:`InputGuard` parsed, or ``_UNSET`` when it did not parse one."""
    return getattr(request.state, "json_body", _UNSET)


def unset(value: Any) -> bool:
    """True for the marker :func:`stashed_json` returns when nothing was parsed."""
    return value is _UNSET


def _is_json(content_type: bytes | None) -> bool:
    return content_type is None or b"json" in content_type.lower()


def _int_or_none(value: bytes | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


async def _drain(receive: Receive, budget: int) -> None:
    """Read and drop the rest of a body, up to ``budget`` bytes."""
    seen = 0
    while seen <= budget:
        message = await receive()
        if message["type"] != "http.request":
            return
        seen += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _replay(raw: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return replay

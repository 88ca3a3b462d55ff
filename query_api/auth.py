"""Keys, tenants and roles on every HTTP request, and browser-borne requests refused.

One ASGI middleware (:class:`SecurityMiddleware`) runs before any route, in this order:

1. ``Host`` outside the allow-list (loopback names, the bound host, ``allowed_hosts``) → 400;
2. a foreign ``Origin`` (not this server's own origin nor in ``allowed_origins``) → 403;
3. a ``POST``/``PUT``/``PATCH``/``DELETE`` carrying a body that is not ``application/json``
   → 415 (a browser can send ``text/plain`` or a form without a CORS preflight);
4. the bearer key (``Authorization: Bearer bc_…``): none, unknown or revoked → 401;
5. the route's roles (:data:`RULES`; a route not listed is admin-only) → 403;
6. the tenant: a body or query ``user_id`` naming another tenant → 403 (admins may name
   any); an absent one is filled in with the key's tenant before the route sees it.

While no key exists at all the service runs open (as before keys), but answers loopback
clients only; ``serve`` refuses to bind a non-loopback address then (:func:`open_bind_refusal`).
Every refusal is the contract's JSON error body.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from breadcrumb.query_api.errors import ApiError
from breadcrumb.query_api.keyring import FORWARDED, ForwardingKeyRing, KeyRing, Principal
from breadcrumb.settings import Settings
from breadcrumb.stores.keys.store import KeyStore, key_store_for

log = logging.getLogger(__name__)
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "ip6-localhost"})
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
TESTCLIENT = ("testclient", "testserver")  # Starlette's in-process client: no socket at all
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
ALL_ROLES = frozenset({"agent", "reader", "admin"})
ADMIN = frozenset({"admin"})


@dataclass(frozen=True, slots=True)
class Rule:
    """Which roles may call a route, and where its ``user_id`` is (body, events, query)."""

    roles: frozenset[str]
    tenant_in: str | None = None


PUBLIC = Rule(frozenset())
_PUBLISH, _RECALL = frozenset({"agent", "admin"}), ALL_ROLES
_READ = frozenset({"reader", "admin"})
RULES: list[tuple[str, re.Pattern[str], Rule]] = [
    ("GET", re.compile(r"^/healthz$"), PUBLIC),
    ("GET", re.compile(r"^/readyz$"), PUBLIC),  # probes carry no key; says which check failed
    ("GET", re.compile(r"^/dashboard(/assets/[^/]+)?$"), PUBLIC),  # static page, no data
    ("GET", re.compile(r"^/(openapi\.json|docs|docs/oauth2-redirect|redoc)$"), PUBLIC),
    ("POST", re.compile(r"^/v1/events$"), Rule(_PUBLISH, "events")),
    ("POST", re.compile(r"^/v1/flush$"), Rule(_PUBLISH, "body")),
    ("POST", re.compile(r"^/v1/recall(_source)?$"), Rule(_RECALL, "body")),
    ("GET", re.compile(r"^/v1/threads/.+/events$"), Rule(_READ, "query")),
    # issue 29: an import (a publisher's key) waits for its own threads' backlog
    ("GET", re.compile(r"^/v1/threads/.+/pending$"), Rule(ALL_ROLES, "query")),
    ("GET", re.compile(r"^/v1/memories/[^/]+(/audit)?$"), Rule(_READ, "query")),
    ("PATCH", re.compile(r"^/v1/memories/[^/]+$"), Rule(ADMIN, "body")),
    # issue 26 (routes.browse, routes.forget): browse within the tenant; dead letters
    # scoped in the route; forget by an admin or the tenant's own agent key
    ("GET", re.compile(r"^/v1/(memories|threads)$"), Rule(_READ, "query")),
    ("GET", re.compile(r"^/v1/memories/[^/]+/versions$"), Rule(_READ, "query")),
    ("GET", re.compile(r"^/v1/dead_letters$"), Rule(_READ)),
    ("POST", re.compile(r"^/v1/forget$"), Rule(_PUBLISH, "body")),
    ("GET", re.compile(r"^/v1/stats$"), Rule(ALL_ROLES)),  # counts only (CLI ingest polls it)
    ("GET", re.compile(r"^/v1/identity$"), Rule(ALL_ROLES)),  # which data dir this serves
    ("GET", re.compile(r"^/v1/dashboard/(snapshot|stream|whoami)$"), Rule(ALL_ROLES)),  # scoped
    ("GET", re.compile(r"^/v1/dashboard/(memories|threads)/.+$"), Rule(_READ, "query")),
    # issue 47 (routes.explore): tenants scoped in the route; threads by last event, facts
    ("GET", re.compile(r"^/v1/dashboard/tenants$"), Rule(ALL_ROLES)),
    ("GET", re.compile(r"^/v1/dashboard/threads$"), Rule(_READ, "query")),
    ("GET", re.compile(r"^/v1/facts(/history)?$"), Rule(_READ, "query")),
    *((m, re.compile(r"^/mcp/?$"), Rule(ALL_ROLES | {FORWARDED}))  # tools bind the tenant
      for m in ("GET", "POST", "DELETE")),
]
ADMIN_ONLY = Rule(ADMIN)  # /metrics, /v1/admin/*, and any route not listed above


def rule_for(method: str, path: str) -> Rule:
    """The access rule of a request (fail closed: unknown routes are admin-only)."""
    for rule_method, pattern, rule in RULES:
        if (method == rule_method or (method == "HEAD" and rule_method == "GET")) and \
                pattern.match(path):
            return rule
    return ADMIN_ONLY


def _split_list(value: str) -> set[str]:
    return {part.strip().lower() for part in value.split(",") if part.strip()}


def allowed_hosts(settings: Settings) -> frozenset[str] | None:
    """Host names (no port) a request may name; None when ``allowed_hosts`` is ``*``."""
    extra = _split_list(settings.allowed_hosts)
    if "*" in extra:
        return None
    bound = settings.host.strip("[]").lower()
    names = set(LOOPBACK_NAMES) | extra
    if bound in WILDCARD_BINDS:
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
    else:
        names.add(bound)
    return frozenset(names)


def host_name(host_header: str) -> str:
    """``example.com:8765`` → ``example.com``; ``[::1]:8765`` → ``::1``."""
    value = host_header.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def is_loopback(address: str) -> bool:
    """A loopback IP or name (``localhost``); False for anything else."""
    name = address.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def open_bind_refusal(settings: Settings, store: KeyStore | None = None) -> str | None:
    """Why the service must not bind ``settings.host`` (no key exists), or None if it may."""
    if is_loopback(settings.host):
        return None
    if (store or key_store_for(settings)).count() > 0:
        return None
    return (f"refusing to listen on {settings.host}: no API key exists, so anyone who can "
            f"reach that address could read and write every tenant's memories. Create one "
            f"first (breadcrumb keys create --tenant USER --role admin"
            f"{'' if settings.mode == 'embedded' else ' --mode cluster'}) or bind 127.0.0.1.")


def principal_of(request: Request) -> Principal | None:
    """The caller's principal (None while the service runs without keys)."""
    found: Principal | None = getattr(request.state, "principal", None)
    return found


def sees_tenant(principal: Principal | None, user_id: str) -> bool:
    """Whether this caller may see data of ``user_id``."""
    return principal is None or principal.is_admin or principal.tenant == user_id


class SecurityMiddleware:
    """The checks listed in the module docstring, as pure ASGI (streams pass untouched)."""

    def __init__(self, app: ASGIApp, settings: Settings,
                 keyring: KeyRing | ForwardingKeyRing | None = None) -> None:
        self.app = app
        self.hosts = allowed_hosts(settings)
        self.origins = _split_list(settings.allowed_origins)
        self.keyring: KeyRing | ForwardingKeyRing = keyring or KeyRing(
            key_store_for(settings), settings.key_cache_seconds)
        self.max_body = settings.limit_body_bytes  # beyond it the body is not bound here

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            receive = await self._check(scope, receive)
        except ApiError as exc:
            await _send_error(send, exc)
            return
        await self.app(scope, receive, send)

    async def _check(self, scope: Scope, receive: Receive) -> Receive:
        headers = Headers(scope=scope)
        self._check_browser(scope, headers)
        rule = rule_for(scope["method"], scope["path"])
        if rule is PUBLIC:
            return receive
        try:
            if isinstance(self.keyring, KeyRing) and \
                    self.keyring.fresh(_bearer(headers.get("authorization"))):
                principal = self._authenticate(scope, headers)  # cached: no store read
            else:
                principal = await run_in_threadpool(self._authenticate, scope, headers)
        except ApiError:
            raise
        except Exception as exc:  # the key store is down and this key was never read:
            # refuse (fail closed), never a 500; the keyring said why once (no traceback)
            log.info("reading API keys failed: %s", exc)
            raise ApiError(503, "keys_unavailable", "the API keys cannot be read now (the "
                           "key store does not answer); retry later") from exc
        scope.setdefault("state", {})["principal"] = principal
        if principal is None or principal.role == FORWARDED:
            return receive
        if principal.role not in rule.roles:
            raise ApiError(403, "forbidden", f"a {principal.role} key may not "
                                             f"{scope['method']} {scope['path']}")
        _bind_query(scope, principal, rule.tenant_in == "query")
        if scope["method"] in BODY_METHODS:
            return await _bind_body(receive, scope, principal, rule.tenant_in, self.max_body)
        return receive

    def _check_browser(self, scope: Scope, headers: Headers) -> None:
        host = headers.get("host")
        client = (scope.get("client") or ("", 0))[0]
        in_process = (client, host) == TESTCLIENT
        if host is not None and self.hosts is not None and not in_process and \
                host_name(host) not in self.hosts:
            raise ApiError(400, "host_not_allowed", f"Host {host!r} is not served here (set "
                           "BREADCRUMB_ALLOWED_HOSTS to add a name)")
        origin = headers.get("origin")
        if origin is not None and not self._own_origin(origin, host):
            raise ApiError(403, "foreign_origin", f"requests from origin {origin!r} are refused")
        if scope["method"] in BODY_METHODS and _has_body(headers):
            media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if media != "application/json":
                raise ApiError(415, "unsupported_media_type",
                               f"the body must be application/json, not {media or 'untyped'!r}")

    def _own_origin(self, origin: str, host: str | None) -> bool:
        value = origin.strip().lower().rstrip("/")
        if value in self.origins or "*" in self.origins:
            return True
        parts = urlsplit(value)
        return parts.scheme in ("http", "https") and host is not None and \
            parts.netloc == host.strip().lower()

    def _authenticate(self, scope: Scope, headers: Headers) -> Principal | None:
        token = _bearer(headers.get("authorization"))
        if not self.keyring.has_keys():
            client = (scope.get("client") or ("",))[0]
            if _is_ip(client) and not is_loopback(client):
                raise ApiError(401, "key_required", "no API key exists yet: this server "
                                                    "answers loopback clients only")
            return None
        if token is None:
            raise ApiError(401, "unauthorized", "send Authorization: Bearer <key>")
        principal = self.keyring.verify(token)
        if principal is None:
            raise ApiError(401, "unauthorized", "unknown or revoked key")
        return principal


def _bearer(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _has_body(headers: Headers) -> bool:
    length = headers.get("content-length")
    return "content-type" in headers or "transfer-encoding" in headers or \
        (length is not None and length.strip() not in ("", "0"))


def _claim(principal: Principal, named: Any, where: str) -> None:
    if not principal.is_admin and named != principal.tenant:
        raise ApiError(403, "tenant_forbidden",
                       f"{where} names another tenant than this key's")


def _bind_query(scope: Scope, principal: Principal, fill: bool) -> None:
    pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    named = [value for name, value in pairs if name == "user_id"]
    for value in named:
        _claim(principal, value, "query user_id")
    if fill and not named:
        pairs.append(("user_id", principal.tenant))
        scope["query_string"] = urlencode(pairs).encode("latin-1")


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The body, and whether it ended; reading stops once it passes ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), True
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True
        if size > limit:
            return b"".join(chunks), False


def _replaying(body: bytes, more_body: bool, receive: Receive) -> Receive:
    """``receive`` with ``body`` (already read) first. ``more_body``: the rest is still to be
    read (an oversized body goes on unbound to the input guard, which answers 413)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": more_body}

    return replay


async def _bind_body(receive: Receive, scope: Scope, principal: Principal,
                     tenant_in: str | None, limit: int) -> Receive:
    body, complete = await _read_body(receive, limit)
    if not complete:
        return _replaying(body, True, receive)
    try:
        data = json.loads(body) if body else None
    except (ValueError, RecursionError):
        data = None  # not JSON: the route answers 400/422 itself
    if isinstance(data, dict) and _bind_object(data, principal, tenant_in):
        body = json.dumps(data, separators=(",", ":")).encode()
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"content-length"] + \
            [(b"content-length", str(len(body)).encode())]
    return _replaying(body, False, receive)


def _bind_object(data: dict[str, Any], principal: Principal, tenant_in: str | None) -> bool:
    """Check every ``user_id`` of a JSON body; fill absent ones. True when it changed."""
    changed = False
    targets = [("body user_id", data)]
    events = data.get("events")
    if isinstance(events, list):
        targets += [(f"events[{i}].user_id", e) for i, e in enumerate(events)
                    if isinstance(e, dict)]
    fill = {"body": targets[:1], "events": targets[1:]}.get(tenant_in or "", [])
    for where, obj in targets:
        if obj.get("user_id") is not None:
            _claim(principal, obj["user_id"], where)
        elif any(obj is target for _, target in fill):
            obj["user_id"] = principal.tenant
            changed = True
    return changed


async def _send_error(send: Send, exc: ApiError) -> None:
    body = json.dumps(exc.body()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if exc.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": exc.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def install_security(app: Any, settings: Settings,
                     keyring: KeyRing | ForwardingKeyRing | None = None) -> None:
    """Register :class:`SecurityMiddleware` on a FastAPI/Starlette app."""
    app.add_middleware(SecurityMiddleware, settings=settings, keyring=keyring)

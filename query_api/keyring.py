"""Who is calling: a bearer key resolved through the key store into a :class:`Principal`.

:class:`KeyRing` reads the store (``stores.keys.store``) and keeps each lookup for ``ttl``
seconds, so a key created or revoked by ``breadcrumb keys`` in another process takes
effect within that time; :class:`ForwardingKeyRing` serves ``breadcrumb mcp --url``.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from breadcrumb.stores.keys.store import KeyStore, parse_key

log = logging.getLogger(__name__)
FORWARDED = "forwarded"  # an MCP proxy's caller: the query service behind it checks the key


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: a key's id, tenant and role."""

    key_id: str
    tenant: str
    role: str

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


class KeyRing:
    """Key lookups through the store, each cached for ``ttl`` seconds (revocation delay)."""

    def __init__(self, store: KeyStore, ttl: float = 1.0) -> None:
        self.store, self.ttl = store, ttl
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, Any]] = {}
        self._loading: dict[str, threading.Lock] = {}  # name -> the lock of its one load
        # the last successful read of each name: served while the store is down
        self._known: dict[str, Any] = {}
        self.unavailable: str | None = None  # why the store cannot be read now

    def _fresh_hit(self, name: str) -> tuple[bool, Any]:
        with self._lock:
            hit = self._cache.get(name)
        if hit is not None and time.monotonic() - hit[0] < self.ttl:
            return True, hit[1]
        return False, None

    def _cached(self, name: str, load: Any) -> Any:
        """The cached value of ``name``, else ``load()``'s. Concurrent misses of one name
        wait for a single load (no stampede on the store when an entry expires under
        load: 20 agents posting at once each opened a database connection)."""
        found, value = self._fresh_hit(name)
        if found:
            return value
        with self._lock:
            gate = self._loading.setdefault(name, threading.Lock())
        with gate:
            found, value = self._fresh_hit(name)  # loaded by the caller we waited for
            if found:
                return value
            started = time.monotonic()  # the value is at least as new as this
            try:
                try:
                    value = load()
                except Exception as exc:
                    return self._last_known(name, exc, started)
                with self._lock:
                    if len(self._cache) > 10_000:  # unknown ids must not grow memory unbounded
                        self._cache.clear()
                    if len(self._known) > 10_000:
                        self._known = {k: v for k, v in self._known.items() if v is not None}
                    self._cache[name] = (started, value)
                    self._known[name] = value
                    if self.unavailable is not None:
                        log.info("API keys readable again (they were not: %s)", self.unavailable)
                        self.unavailable = None
            finally:  # cached before the gate goes: a caller arriving after it finds the value
                with self._lock:
                    self._loading.pop(name, None)
            return value

    def _last_known(self, name: str, exc: Exception, started: float) -> Any:
        """While the store cannot be read: the value of the last successful read of
        ``name`` (reused for ``ttl`` before the store is tried again), else ``exc``.
        Said once per outage, in one line."""
        from breadcrumb.streams.failure_policy import describe

        with self._lock:
            if self.unavailable is None:
                self.unavailable = describe(exc)
                log.warning("API keys cannot be read (%s): serving the keys read last until "
                            "the store answers", self.unavailable)
            if name not in self._known:
                raise exc
            value = self._known[name]
            self._cache[name] = (started, value)
            return value

    def fresh(self, token: str | None) -> bool:
        """Whether checking ``token`` needs no store read (so no worker thread either)."""
        parsed = parse_key(token) if token else None
        now = time.monotonic()
        with self._lock:
            names = ["#count"] + ([parsed[0]] if parsed else [])
            return all(n in self._cache and now - self._cache[n][0] < self.ttl for n in names)

    def has_keys(self) -> bool:
        """Whether any key was ever created (then every request needs one)."""
        return bool(self._cached("#count", self.store.count))

    def verify(self, token: str) -> Principal | None:
        """The principal of a valid, unrevoked key; None otherwise."""
        parsed = parse_key(token)
        if parsed is None:
            return None
        key_id, secret = parsed
        record = self._cached(key_id, lambda: self.store.get(key_id))
        if record is None or record.revoked_at is not None or not record.matches(secret):
            return None
        return Principal(record.key_id, record.tenant, record.role)


class ForwardingKeyRing:
    """For ``breadcrumb mcp --url``: any well-formed key passes here and is forwarded to
    the query service, which verifies it; a key is required when ``require`` (non-loopback
    bind), else a keyless loopback caller is forwarded as is."""

    def __init__(self, require: bool) -> None:
        self.require = require

    def has_keys(self) -> bool:
        return self.require

    def verify(self, token: str) -> Principal | None:
        return Principal("", "", FORWARDED) if parse_key(token) else None

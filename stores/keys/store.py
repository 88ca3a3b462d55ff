"""API keys: random bearer keys stored hashed, each bound to one tenant and one role.

A key reads ``bc_<key_id>_<secret>``: ``key_id`` (12 hex digits) names the row, ``secret``
(32 random bytes, URL-safe) is never stored — only ``HMAC-SHA256(salt, secret)`` with a
per-key random salt, compared in constant time. Embedded, the keys live in
``<data_dir>/keys.sqlite3`` (mode 0600, not part of any generation: replays never touch
it); in cluster mode, in the ``api_keys`` table of the SQL store. Every call reads the
store, so keys created or revoked by ``breadcrumb keys`` in another process are seen at
once (the HTTP service caches lookups for about a second, see ``query_api.auth``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from breadcrumb.settings import Settings

Role = Literal["agent", "reader", "admin"]
ROLES: tuple[Role, ...] = ("agent", "reader", "admin")
PREFIX = "bc"
KEY_FILE = "keys.sqlite3"
_KEY_RE = re.compile(r"^bc_([0-9a-f]{12})_([A-Za-z0-9_-]{20,128})$")
_COLUMNS = "key_id, tenant, role, salt, secret_hash, created_at, revoked_at"
_DDL = (
    "CREATE TABLE IF NOT EXISTS api_keys ("
    " key_id VARCHAR(32) NOT NULL PRIMARY KEY,"
    " tenant VARCHAR(255) NOT NULL,"
    " role VARCHAR(16) NOT NULL,"
    " salt VARCHAR(64) NOT NULL,"
    " secret_hash VARCHAR(64) NOT NULL,"
    " created_at VARCHAR(40) NOT NULL,"
    " revoked_at VARCHAR(40) NULL)"
)


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One stored key (never its secret)."""

    key_id: str
    tenant: str
    role: str
    salt: str
    secret_hash: str
    created_at: str
    revoked_at: str | None = None

    def public(self) -> dict[str, Any]:
        """What ``keys list`` shows: no salt, no hash."""
        return {"key_id": self.key_id, "tenant": self.tenant, "role": self.role,
                "created_at": self.created_at, "revoked_at": self.revoked_at}

    def matches(self, secret: str) -> bool:
        """Constant-time comparison of ``secret`` with the stored hash."""
        return hmac.compare_digest(_digest(self.salt, secret), self.secret_hash)


def _digest(salt: str, secret: str) -> str:
    return hmac.new(salt.encode(), secret.encode(), hashlib.sha256).hexdigest()


def parse_key(token: str) -> tuple[str, str] | None:
    """``(key_id, secret)`` of a well-formed key, else None."""
    found = _KEY_RE.match(token.strip())
    return (found.group(1), found.group(2)) if found else None


def new_key(tenant: str, role: str, now: datetime | None = None) -> tuple[ApiKey, str]:
    """A fresh key record and its plaintext (shown once)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    if not tenant or len(tenant) > 255:
        raise ValueError("tenant must be 1 to 255 characters")
    key_id, secret, salt = secrets.token_hex(6), secrets.token_urlsafe(32), secrets.token_hex(16)
    at = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    record = ApiKey(key_id, tenant, role, salt, _digest(salt, secret), at)
    return record, f"{PREFIX}_{key_id}_{secret}"


class KeyStore(Protocol):
    """Where keys live (embedded file or the cluster's SQL database)."""

    def add(self, key: ApiKey) -> None: ...

    def get(self, key_id: str) -> ApiKey | None: ...

    def list_keys(self) -> list[ApiKey]: ...

    def revoke(self, key_id: str, at: str) -> bool: ...

    def count(self) -> int: ...


class SqlKeyStore:
    """The ``api_keys`` table over a DB-API connection factory (sqlite3 or pymysql)."""

    def __init__(self, connect: Callable[[], Any], placeholder: str = "?",
                 exists: Callable[[], bool] = lambda: True, reuse: bool = False) -> None:
        self._connect = connect
        self._ph = placeholder
        self._exists = exists  # False: nothing stored yet (reading must not create files)
        self._lock = threading.Lock()
        self._ready = False
        self._reuse = reuse  # keep one connection open (a server; pinged before each use)
        self._conn: Any = None

    def _connection(self) -> Any:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.ping(reconnect=True)  # a server that closed it (wait_timeout, restart)
                return conn
            except Exception:  # noqa: BLE001 - a dead connection is replaced, not fatal
                with suppress(Exception):
                    conn.close()
        return self._connect()

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        with self._lock:
            conn = self._connection() if self._reuse else self._connect()
            try:
                cur = conn.cursor()
                if not self._ready:
                    cur.execute(_DDL)
                    self._ready = True
                yield cur
                conn.commit()
            except BaseException:
                with suppress(Exception):
                    conn.close()
                raise
            if self._reuse:
                self._conn = conn
            else:
                conn.close()

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[ApiKey]:
        if not self._exists():
            return []
        with self._cursor() as cur:
            cur.execute(sql.replace("?", self._ph), tuple(params))
            return [ApiKey(*row) for row in cur.fetchall()]

    def add(self, key: ApiKey) -> None:
        values = (key.key_id, key.tenant, key.role, key.salt, key.secret_hash, key.created_at,
                  key.revoked_at)
        marks = ", ".join([self._ph] * len(values))
        with self._cursor() as cur:
            cur.execute(f"INSERT INTO api_keys ({_COLUMNS}) VALUES ({marks})", values)

    def get(self, key_id: str) -> ApiKey | None:
        rows = self._rows(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,))
        return rows[0] if rows else None

    def list_keys(self) -> list[ApiKey]:
        return self._rows(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, key_id")

    def revoke(self, key_id: str, at: str) -> bool:
        if not self._exists():
            return False
        with self._cursor() as cur:
            cur.execute(f"UPDATE api_keys SET revoked_at = {self._ph} WHERE key_id = "
                        f"{self._ph} AND revoked_at IS NULL", (at, key_id))
            return bool(cur.rowcount)

    def count(self) -> int:
        """Keys ever created (revoked ones too: once a key exists, keys are required)."""
        if not self._exists():
            return 0
        with self._cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM api_keys")
            return int(cur.fetchone()[0])


def sqlite_key_store(data_dir: Path) -> SqlKeyStore:
    """Embedded: ``<data_dir>/keys.sqlite3``, created 0600 (its folder 0700) on first write."""
    path = data_dir / KEY_FILE

    def connect() -> sqlite3.Connection:
        if not path.exists():
            data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        os.chmod(path, 0o600)
        return sqlite3.connect(str(path), timeout=10.0)

    return SqlKeyStore(connect, "?", exists=path.exists)


def mysql_key_store(settings: Settings) -> SqlKeyStore:
    """Cluster: the ``api_keys`` table in the configured MySQL/TiDB database (TLS as set)."""
    import pymysql

    from breadcrumb.stores.sql.mysql.store import mysql_store

    kwargs = mysql_store(settings).db.connect_kwargs()
    kwargs["autocommit"] = True
    return SqlKeyStore(lambda: pymysql.connect(**kwargs), "%s", reuse=True)


def key_store_for(settings: Settings) -> SqlKeyStore:
    """The key store of this deployment: the data dir embedded, the SQL store in cluster."""
    if settings.mode == "cluster":
        return mysql_key_store(settings)
    return sqlite_key_store(settings.data_dir)


def utc_now_iso() -> str:
    """Now, as the store writes it."""
    return datetime.now(UTC).isoformat(timespec="seconds")

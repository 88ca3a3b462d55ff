"""Keys stored hashed, and the browser checks of query_api.auth on a tiny app (no runtime)."""

from __future__ import annotations

import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from breadcrumb.query_api.auth import (
    KeyRing,
    SecurityMiddleware,
    host_name,
    open_bind_refusal,
    principal_of,
)
from breadcrumb.query_api.errors import install_error_handlers
from breadcrumb.settings import Settings
from breadcrumb.stores.keys.store import (
    SqlKeyStore,
    new_key,
    parse_key,
    sqlite_key_store,
    utc_now_iso,
)


def _app(settings: Settings) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/v1/recall")
    async def recall(request: Request) -> dict[str, Any]:
        principal = principal_of(request)
        return {"body": await request.json(), "tenant": principal.tenant if principal else None}

    @app.get("/v1/stats")
    async def stats() -> dict[str, Any]:
        return {"ok": True}

    app.add_middleware(SecurityMiddleware, settings=settings)
    return app


def test_keys_are_stored_hashed_in_a_private_file(tmp_path: Path) -> None:
    store = sqlite_key_store(tmp_path / "d")
    assert store.count() == 0 and not (tmp_path / "d").exists()  # reading creates nothing
    record, key = new_key("acme", "agent")
    store.add(record)
    key_id, secret = parse_key(key) or ("", "")
    assert key_id == record.key_id and key.startswith("bc_")
    path = tmp_path / "d" / "keys.sqlite3"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o700
    assert secret.encode() not in path.read_bytes()
    ring = KeyRing(store, ttl=0)
    assert ring.verify(key) is not None and ring.verify(key + "x") is None
    assert ring.verify(key.replace(key_id, "0" * 12)) is None
    assert store.revoke(record.key_id, utc_now_iso()) and ring.verify(key) is None
    assert not store.revoke(record.key_id, utc_now_iso())  # already revoked
    with pytest.raises(ValueError):
        new_key("acme", "root")


def test_browser_borne_requests_are_refused(tmp_path: Path) -> None:
    http = TestClient(_app(Settings(data_dir=tmp_path)))
    ok = http.post("/v1/recall", json={"user_id": "u", "query": "q"})
    assert ok.status_code == 200 and ok.json()["tenant"] is None  # no key exists: open
    for media in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        refused = http.post("/v1/recall", content=b'{"user_id": "u"}',
                            headers={"content-type": media})
        assert refused.status_code == 415
        assert refused.json()["error"]["code"] == "unsupported_media_type"
    assert http.post("/v1/recall", content=b"{}").status_code == 415  # untyped body
    foreign = http.post("/v1/recall", json={}, headers={"origin": "http://evil.example"})
    assert foreign.status_code == 403 and foreign.json()["error"]["code"] == "foreign_origin"
    assert http.get("/v1/stats", headers={"origin": "null"}).status_code == 403
    assert http.get("/v1/stats", headers={"origin": "http://testserver"}).status_code == 200
    for host in ("evil.example", "127.0.0.1.evil.example", "localhost.evil:80"):
        bad = http.get("/v1/stats", headers={"host": host})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "host_not_allowed"
    for host in ("localhost:8765", "127.0.0.1", "[::1]:8765", "LOCALHOST"):
        assert http.get("/v1/stats", headers={"host": host}).status_code == 200


def test_allow_lists_extend_by_settings(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, allowed_hosts="api.example.com",
                        allowed_origins="https://ops.example.com")
    http = TestClient(_app(settings))
    assert http.get("/v1/stats", headers={"host": "api.example.com"}).status_code == 200
    assert http.get("/v1/stats", headers={"origin": "https://ops.example.com"}
                    ).status_code == 200
    anyhost = TestClient(_app(Settings(data_dir=tmp_path, allowed_hosts="*")))
    assert anyhost.get("/v1/stats", headers={"host": "whatever.example"}).status_code == 200


def test_open_mode_answers_loopback_clients_only(tmp_path: Path) -> None:
    app = _app(Settings(data_dir=tmp_path))
    remote = TestClient(app, client=("10.1.2.3", 5000), base_url="http://localhost")
    refused = remote.get("/v1/stats")
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "key_required"
    local = TestClient(app, client=("127.0.0.1", 5000), base_url="http://localhost")
    assert local.get("/v1/stats").status_code == 200


def test_bind_refused_without_keys(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, host="0.0.0.0")
    reason = open_bind_refusal(settings)
    assert reason is not None and "keys create" in reason
    assert open_bind_refusal(Settings(data_dir=tmp_path, host="127.0.0.1")) is None
    assert open_bind_refusal(Settings(data_dir=tmp_path, host="::1")) is None
    record, _ = new_key("ops", "admin")
    sqlite_key_store(tmp_path).add(record)
    assert open_bind_refusal(settings) is None


def test_tenant_filled_from_the_key(tmp_path: Path) -> None:
    record, key = new_key("acme", "reader")
    sqlite_key_store(tmp_path).add(record)
    http = TestClient(_app(Settings(data_dir=tmp_path)))
    auth = {"Authorization": f"Bearer {key}"}
    answer = http.post("/v1/recall", json={"query": "q"}, headers=auth)
    assert answer.json() == {"body": {"query": "q", "user_id": "acme"}, "tenant": "acme"}
    same = http.post("/v1/recall", json={"query": "q", "user_id": "acme"}, headers=auth)
    assert same.status_code == 200
    assert http.post("/v1/recall", json={"user_id": "acme2"}, headers=auth).status_code == 403
    assert http.post("/v1/recall", json={"q": 1}).status_code == 401
    assert http.post("/v1/recall", json={}, headers={"Authorization": "Basic abc"}
                     ).status_code == 401


def test_host_name() -> None:
    assert host_name("Example.COM:8765") == "example.com"
    assert host_name("[::1]:80") == "::1" and host_name("localhost.") == "localhost"


def test_a_key_store_that_fails_answers_503_not_500(tmp_path: Path) -> None:
    class Broken:
        def count(self) -> int:
            raise OSError("database is down")

        def get(self, key_id: str) -> None:
            raise OSError("database is down")

    app = FastAPI()

    @app.get("/v1/stats")
    async def stats() -> dict[str, bool]:
        return {"ok": True}

    app.add_middleware(SecurityMiddleware, settings=Settings(data_dir=tmp_path),
                       keyring=KeyRing(Broken(), ttl=0))  # type: ignore[arg-type]
    answer = TestClient(app).get("/v1/stats")
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "keys_unavailable"


class _SlowCountingStore:
    """A key store whose count takes a while (a database round trip), counting its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def count(self) -> int:
        with self.lock:
            self.calls += 1
        time.sleep(0.2)
        return 1


def test_concurrent_misses_of_an_expired_entry_load_it_once() -> None:
    """20 requests arriving together when the cached key count has expired make one store
    read, not 20 (each was a fresh database connection in cluster mode)."""
    store = _SlowCountingStore()
    ring = KeyRing(store, ttl=60.0)  # type: ignore[arg-type]
    start = threading.Barrier(20)
    answers: list[bool] = []

    def ask() -> None:
        start.wait()
        answers.append(ring.has_keys())

    threads = [threading.Thread(target=ask) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert answers == [True] * 20
    assert store.calls == 1
    assert ring.has_keys() and store.calls == 1  # still fresh


class _Conn:
    """A DB-API connection stand-in: counts pings, can be made dead."""

    def __init__(self, log: list[str]) -> None:
        self.log, self.dead = log, False

    def ping(self, reconnect: bool = False) -> None:
        self.log.append("ping")
        if self.dead:
            raise ConnectionError("gone")

    def cursor(self) -> Any:
        conn = self

        class _Cur:
            def execute(self, sql: str, params: Any = ()) -> None:
                conn.log.append(sql.split()[0])

            def fetchone(self) -> tuple[int]:
                return (3,)

        return _Cur()

    def commit(self) -> None: ...

    def close(self) -> None:
        self.log.append("close")


def test_a_server_key_store_reuses_its_connection_and_replaces_a_dead_one() -> None:
    log: list[str] = []
    made: list[_Conn] = []

    def connect() -> _Conn:
        made.append(_Conn(log))
        return made[-1]

    store = SqlKeyStore(connect, "%s", reuse=True)
    assert store.count() == 3 and store.count() == 3
    assert len(made) == 1 and log.count("ping") == 1
    made[0].dead = True
    assert store.count() == 3
    assert len(made) == 2 and "close" in log  # the dead one closed, a new one made


def test_keys_read_before_an_outage_keep_working_and_unknown_ones_fail_closed(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 30: the key ring serves the last successful read of each key (and of "are
    there keys") while the store is down; a key never read answers 503; said once."""
    store = sqlite_key_store(tmp_path / "d")
    record, key = new_key("acme", "agent")
    store.add(record)
    _, other = new_key("acme", "agent")

    class Flaky:
        down = False

        def count(self) -> int:
            if self.down:
                raise OSError("database is down")
            return store.count()

        def get(self, key_id: str) -> Any:
            if self.down:
                raise OSError("database is down")
            return store.get(key_id)

    flaky = Flaky()
    app = FastAPI()

    @app.get("/v1/stats")
    async def stats() -> dict[str, bool]:
        return {"ok": True}

    app.add_middleware(SecurityMiddleware, settings=Settings(data_dir=tmp_path),
                       keyring=KeyRing(flaky, ttl=0))  # type: ignore[arg-type]
    client = TestClient(app)
    auth = {"authorization": f"Bearer {key}"}
    assert client.get("/v1/stats", headers=auth).status_code == 200
    flaky.down = True
    for _ in range(3):
        assert client.get("/v1/stats", headers=auth).status_code == 200
    assert client.get("/v1/stats").status_code == 401  # keys exist: one is still required
    refused = client.get("/v1/stats", headers={"authorization": f"Bearer {other}"})
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "keys_unavailable"
    said = [r for r in caplog.records if "API keys cannot be read" in r.getMessage()]
    assert len(said) == 1 and said[0].exc_info is None
    flaky.down = False
    assert client.get("/v1/stats", headers=auth).status_code == 200
    assert client.get("/v1/stats", headers={"authorization": f"Bearer {other}"}
                      ).status_code == 401  # never stored

"""Issue 30: a request whose store is down answers 503 ``store_unavailable`` with the cause
in one line and logs one line without a traceback; any other failure stays a logged 500."""

from __future__ import annotations

import pymysql
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from breadcrumb.query_api.input_guard import InputGuard


def _app() -> FastAPI:
    app = FastAPI()
    app.add_middleware(InputGuard, limit_body_bytes=1 << 20, limit_json_depth=32)

    @app.post("/v1/recall")
    async def recall() -> dict[str, bool]:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as exc:
            raise pymysql.err.OperationalError(
                2003, "Can't connect to MySQL server on '127.0.0.1'\n(refused)") from exc

    @app.get("/v1/stats")
    async def stats() -> dict[str, bool]:
        raise RuntimeError("a bug")

    return app


def test_a_store_outage_is_503_in_one_line_and_a_bug_is_500(
        caplog: pytest.LogCaptureFixture) -> None:
    client = TestClient(_app(), raise_server_exceptions=False)
    answer = client.post("/v1/recall", json={"query": "x"})
    assert answer.status_code == 503
    error = answer.json()["error"]
    assert error["code"] == "store_unavailable" and "\n" not in error["message"]
    assert "2003" in error["message"]
    outage = [r for r in caplog.records if "a store is unavailable" in r.getMessage()]
    assert len(outage) == 1 and outage[0].exc_info is None
    assert client.get("/v1/stats").status_code == 500
    assert any(r.exc_info for r in caplog.records if "unexpected error" in r.getMessage())

"""Cost of the security middleware per request, as ratios to the same app without it.

One tiny FastAPI app (a JSON echo route and a GET route, no stores) served in-process by
``TestClient``; measured alternately, in the same run: no middleware (baseline), the
middleware with no key in the data dir (open mode), and with keys (bearer verified,
``user_id`` checked, an absent one filled in: the body is parsed and rewritten).

    python -m bench.auth [--requests 2000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from breadcrumb.query_api.auth import SecurityMiddleware
from breadcrumb.settings import Settings
from breadcrumb.stores.keys.store import new_key, sqlite_key_store


def _app(settings: Settings | None) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/recall")
    async def recall(request: Request) -> dict[str, Any]:
        return {"n": len(await request.body())}

    @app.get("/v1/memories/{memory_id}")
    async def memory(memory_id: str, user_id: str) -> dict[str, str]:
        return {"id": memory_id, "user_id": user_id}

    if settings is not None:
        app.add_middleware(SecurityMiddleware, settings=settings)
    return app


def _time(http: TestClient, headers: dict[str, str], n: int) -> dict[str, float]:
    body = {"query": "the exact email regex we decided " * 4, "k": 5}
    out: dict[str, list[float]] = {"post_recall": [], "get_memory": []}
    for _ in range(n):
        t = time.perf_counter()
        assert http.post("/v1/recall", json={**body, "user_id": "acme"}
                         if not headers else body, headers=headers).status_code == 200
        out["post_recall"].append(time.perf_counter() - t)
        t = time.perf_counter()
        params = {} if headers else {"user_id": "acme"}
        assert http.get("/v1/memories/m1", params=params, headers=headers).status_code == 200
        out["get_memory"].append(time.perf_counter() - t)
    return {k: statistics.median(v) * 1e6 for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        open_dir, keyed_dir = Path(tmp) / "open", Path(tmp) / "keyed"
        record, key = new_key("acme", "reader")
        sqlite_key_store(keyed_dir).add(record)
        cases = {
            "baseline": (TestClient(_app(None)), {}),
            "open": (TestClient(_app(Settings(data_dir=open_dir))), {}),
            "keyed": (TestClient(_app(Settings(data_dir=keyed_dir))),
                      {"Authorization": f"Bearer {key}"}),
        }
        results: dict[str, list[dict[str, float]]] = {name: [] for name in cases}
        for _ in range(4):  # alternate to share the machine's noise
            for name, (http, headers) in cases.items():
                results[name].append(_time(http, headers, args.requests // 4))
    medians = {name: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
               for name, runs in results.items()}
    base = medians["baseline"]
    report = {name: {k: {"median_us": round(v, 1), "ratio_to_baseline": round(v / base[k], 3)}
                     for k, v in m.items()} for name, m in medians.items()}
    print(json.dumps(report, indent=1))  # noqa: T201


if __name__ == "__main__":
    main()

"""``/v1/recall`` answers are encoded once by orjson
(query_api.routes.recalls.json_response): the same JSON values as FastAPI's own encoding,
also for types orjson does not know."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.encoders import jsonable_encoder

from breadcrumb.query_api.routes.recalls import json_response


def test_json_response_matches_fastapi_encoding() -> None:
    content = {"memories": [{"id": "m1", "score": 0.1234567890123, "score_parts": {"a": 1e-05},
                             "tags": ["x", "ü", "日本"], "metadata": {"n": None, "t": True}}],
               "evidence": [{"lines": ["a\tb \"q\"", "\u2028"], "event_ts": {"e1": "2024"}}],
               "token_cost": 12, "odd": {1: "int key"}, "kinds": {"env"}, "path": Path("/x")}
    response = json_response(content)
    assert response.media_type == "application/json"
    fastapi_bytes = json.dumps(jsonable_encoder(content), ensure_ascii=False, allow_nan=False,
                               separators=(",", ":")).encode()  # Starlette's JSONResponse
    assert json.loads(bytes(response.body)) == json.loads(fastapi_bytes)


def test_settle_heap_freezes_what_lives_and_later_cycles_are_still_collected() -> None:
    import gc
    import weakref

    from breadcrumb.query_api.app import settle_heap

    class Node:
        def __init__(self) -> None:
            self.me = self

    try:
        settle_heap()
        assert gc.get_freeze_count() > 0
        later = Node()
        alive = weakref.ref(later)
        del later
        gc.collect()
        assert alive() is None  # a cycle made after the freeze is garbage as before
    finally:
        gc.unfreeze()
